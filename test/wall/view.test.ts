import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { INSIDE, nativeLibc, parseLdd, sharedLibraries, wallView } from "../../src/sandbox/wall/view.js";
import { onPath } from "../../src/sandbox/wall/mode.js";
import { repoRoot } from "../helpers/cli.js";

/*
 * What a walled worker sees, as the view the launcher builds (docs/sandbox.md, "Files"): only the files it loads,
 * each under /hookbox, read-only (bwrap-args binds each one --ro-bind); libraries at their own paths; nothing of the
 * host's directories. test/wall/inside.test.ts and outside.test.ts check the same on a real walled process.
 */

const worker = join(repoRoot, "dist/sandbox-worker.js");
const runtime = join(repoRoot, "dist/runtime.js");
const setpriv = onPath("setpriv");
const prlimit = onPath("prlimit");

describe("the wall's view", () => {
  const view = wallView({ files: [worker, runtime], ...(setpriv ? { setpriv } : {}), ...(prlimit ? { prlimit } : {}) });
  const at = (dest: string) => view.binds.filter((bind) => bind.dest === dest).map((bind) => bind.source);

  it("binds Node, package.json, the files asked for and the two packages the worker loads, each at its place under /hookbox", () => {
    expect(INSIDE).toEqual({
      root: "/hookbox",
      node: "/hookbox/bin/node",
      setpriv: "/hookbox/bin/setpriv",
      prlimit: "/hookbox/bin/prlimit",
      packageJson: "/hookbox/package.json",
      dist: "/hookbox/dist",
      modules: "/hookbox/node_modules",
    });
    expect(at("/hookbox/bin/node")).toEqual([process.execPath]);
    expect(at("/hookbox/package.json")).toEqual([join(repoRoot, "package.json")]);
    expect(at("/hookbox/dist/sandbox-worker.js")).toEqual([worker]);
    expect(at("/hookbox/dist/runtime.js")).toEqual([runtime]);
    expect(at("/hookbox/node_modules/isolated-vm")).toEqual([realpathSync(join(repoRoot, "node_modules/isolated-vm"))]);
    expect(at("/hookbox/node_modules/node-gyp-build")).toEqual([realpathSync(join(repoRoot, "node_modules/node-gyp-build"))]);
    expect(view.entries).toEqual(
      new Map([
        [worker, "/hookbox/dist/sandbox-worker.js"],
        [runtime, "/hookbox/dist/runtime.js"],
      ]),
    );
  });

  it("the helpers run before Node (setpriv, prlimit) are bound at their fixed places, with their libraries", () => {
    expect(setprivAndPrlimit(), "this host has util-linux's setpriv and prlimit").toBe(true);
    expect(at("/hookbox/bin/setpriv")).toEqual([setpriv]);
    expect(at("/hookbox/bin/prlimit")).toEqual([prlimit]);
    const bound = new Set(view.binds.map((bind) => bind.dest));
    for (const binary of [process.execPath, setpriv!, prlimit!])
      for (const library of sharedLibraries([binary])) expect(bound, `${library} of ${binary}`).toContain(library);
  });

  it("nothing inside is a host directory: every place is under /hookbox, or a shared library at its own path", () => {
    const libraries = new Set(sharedLibraries([process.execPath, setpriv!, prlimit!]));
    expect(libraries.size).toBeGreaterThan(0);
    for (const bind of view.binds) {
      if (bind.dest.startsWith("/hookbox/")) continue;
      expect(bind.source, `${bind.dest} is a library`).toBe(bind.dest);
      expect(libraries, bind.dest).toContain(bind.dest);
    }
    const host = [repoRoot, process.cwd(), homedir(), tmpdir(), "/etc", "/root", "/home", "/work", "/tmp", "/var", "/usr/local"];
    for (const bind of view.binds)
      for (const dir of host) expect(bind.dest === dir || bind.dest.startsWith(`${dir}/`), `${bind.dest} is under ${dir}`).toBe(false);
    // Each place holds one file: nothing is bound twice.
    expect(new Set(view.binds.map((bind) => bind.dest)).size).toBe(view.binds.length);
  });

  it("Node's permission model may read the files and packages, not the binaries or libraries", () => {
    expect(view.readable).toEqual([
      "/hookbox/package.json",
      "/hookbox/dist/sandbox-worker.js",
      "/hookbox/dist/runtime.js",
      "/hookbox/node_modules/isolated-vm",
      "/hookbox/node_modules/node-gyp-build",
    ]);
  });

  it("the only variable it needs is LIBC, which this host's isolated-vm file names", () => {
    expect(view.env).toEqual({ LIBC: "glibc" });
    expect(nativeLibc("/x/build/Release/isolated_vm.node")).toEqual({ LIBC: "glibc" });
    expect(nativeLibc("/x/prebuilds/linux-x64/isolated-vm.musl.node")).toEqual({ LIBC: "musl" });
    expect(nativeLibc("/x/prebuilds/linux-x64/isolated-vm.musl.node.bak")).toEqual({ LIBC: "glibc" });
    expect(nativeLibc("/x/prebuilds/linux-x64/isolated-vm.glibc.node")).toEqual({ LIBC: "glibc" });
    expect(nativeLibc("/x/prebuilds/linux-x64/isolated-vmXmuslXnode")).toEqual({ LIBC: "glibc" });
  });

  it("without setpriv or prlimit asked for, neither is bound", () => {
    const plain = wallView({ files: [worker] });
    expect(plain.binds.map((bind) => bind.dest).filter((dest) => dest.startsWith("/hookbox/bin/"))).toEqual(["/hookbox/bin/node"]);
  });

  it("an entry with no package.json two levels up gets none bound", () => {
    const elsewhere = wallView({ files: [join(repoRoot, "test/wall/no-such-dir/entry.js")] });
    expect(elsewhere.binds.map((bind) => bind.dest)).not.toContain("/hookbox/package.json");
    expect(elsewhere.readable).not.toContain("/hookbox/package.json");
    expect(elsewhere.entries.get(join(repoRoot, "test/wall/no-such-dir/entry.js"))).toBe("/hookbox/dist/entry.js");
  });
});

describe("shared libraries", () => {
  it("ldd's lines: a library's path after =>, the loader's own path; the vdso and missing ones skipped", () => {
    const output = [
      "\tlinux-vdso.so.1 (0x00007ffd1a5f2000)",
      "\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f0e5c3c0000)",
      "\tlibmissing.so.1 => not found",
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f0e5c3d0000)",
      "\tlibc.so.6 =>/lib/x86_64-linux-gnu/libc.so.6 (0xabc)",
      "\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6  (0x00007f0e5c3e0000)",
      "/usr/bin/setpriv:",
      "",
    ].join("\n");
    expect(parseLdd(output)).toEqual([
      "/lib/x86_64-linux-gnu/libdl.so.2",
      "/lib64/ld-linux-x86-64.so.2",
      "/lib/x86_64-linux-gnu/libc.so.6",
      "/lib/x86_64-linux-gnu/libm.so.6",
    ]);
  });

  it("Node's include libc and the dynamic loader, each once", () => {
    const libraries = sharedLibraries([process.execPath, process.execPath]);
    expect(libraries.some((path) => /\/libc\.so\.6$/.test(path))).toBe(true);
    expect(libraries.some((path) => /\/ld-linux[^/]*\.so\.\d$/.test(path))).toBe(true);
    expect(new Set(libraries).size).toBe(libraries.length);
    // Asked again: the same list.
    expect(sharedLibraries([process.execPath, process.execPath])).toEqual(libraries);
  });

  it("a static binary beside a dynamic one: the dynamic one's are still listed; a missing file is an error naming it", () => {
    const ldconfig = onPath("ldconfig");
    expect(ldconfig, "this host's static ldconfig").toBeDefined();
    expect(sharedLibraries([process.execPath, ldconfig!])).toEqual(sharedLibraries([process.execPath]));
    expect(sharedLibraries([ldconfig!])).toEqual([]);
    // ldd's own words, whole and trimmed (not Node's "Command failed").
    expect(() => sharedLibraries([process.execPath, "/no/such/binary"])).toThrow(
      /^cannot list the shared libraries of \S+, \/no\/such\/binary \(ldd: [^]*ldd: \/no\/such\/binary: No such file or directory\)$/,
    );
    expect(() => sharedLibraries([process.execPath, "/no/such/binary"])).not.toThrow(/Command failed/);
    // Each list is its own: two lists whose paths run together into the same text are not one.
    const at = ldconfig!.lastIndexOf("/");
    expect(() => sharedLibraries([ldconfig!.slice(0, at), ldconfig!.slice(at)])).toThrow(/^cannot list the shared libraries of /);
  });
});

describe("shared libraries, with an ldd of another libc", () => {
  // Older glibc's and musl's ldd exit 1 for a static binary ("not a dynamic executable") and still list the others'.
  let dir: string;
  const savedPath = process.env.PATH;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "hookbox-ldd-"));
    writeFileSync(
      join(dir, "ldd"),
      [
        "#!/bin/sh",
        'for file in "$@"; do',
        '  case "$file" in',
        '    */static*) echo "$file:"; echo "\tnot a dynamic executable" >&2; status=1 ;;',
        '    *) echo "$file:"; echo "\tlibc.so.6 => /lib/$(cat "$(dirname "$0")/generation")/libc.so.6 (0x00007f0e5c3c0000)" ;;',
        "  esac",
        "done",
        'exit "${status:-0}"',
      ].join("\n") + "\n",
    );
    chmodSync(join(dir, "ldd"), 0o755);
    writeFileSync(join(dir, "generation"), "first");
    process.env.PATH = `${dir}:${savedPath}`;
  });
  afterAll(() => {
    process.env.PATH = savedPath;
    rmSync(dir, { recursive: true, force: true });
  });

  it("a static binary adds nothing and the dynamic ones are still listed; each list is asked of ldd once per process", () => {
    expect(sharedLibraries(["/fake/static-setpriv"])).toEqual([]);
    expect(sharedLibraries(["/fake/node", "/fake/static-prlimit"])).toEqual(["/lib/first/libc.so.6"]);
    // Asked again after ldd would answer otherwise: the answer of the first time.
    writeFileSync(join(dir, "generation"), "second");
    expect(sharedLibraries(["/fake/node", "/fake/static-prlimit"])).toEqual(["/lib/first/libc.so.6"]);
    expect(sharedLibraries(["/fake/other-node"])).toEqual(["/lib/second/libc.so.6"]);
  });
});

function setprivAndPrlimit(): boolean {
  return setpriv !== undefined && prlimit !== undefined;
}
