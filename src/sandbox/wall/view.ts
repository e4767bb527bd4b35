import { execFileSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";

/*
 * What a walled process sees: a read-only view of only the files it loads, each bound at a fixed path
 * under /hookbox, so nothing inside names a host directory. The Node binary's shared libraries keep their
 * own paths (the dynamic loader looks for them there).
 */

/** Where hookbox's files appear inside the wall. */
export const INSIDE = {
  root: "/hookbox",
  node: "/hookbox/bin/node",
  setpriv: "/hookbox/bin/setpriv",
  prlimit: "/hookbox/bin/prlimit",
  packageJson: "/hookbox/package.json",
  dist: "/hookbox/dist",
  modules: "/hookbox/node_modules",
} as const;

export interface Bind {
  /** Host path (symlinks resolved by bwrap). */
  source: string;
  /** Path inside the wall. */
  dest: string;
}

export interface WallView {
  binds: Bind[];
  /** Inside paths Node's permission model lets the process read (the same files; libraries excepted). */
  readable: string[];
  /** The inside path of each entry file, by host path. */
  entries: Map<string, string>;
  /** Environment the process needs to load what it loads (see `nativeLibc`). */
  env: Record<string, string>;
}

export interface ViewRequest {
  /** JS files the process runs or reads (the worker entry, runtime.js; the probe), bound under /hookbox/dist. */
  files: string[];
  /** A tool run before Node inside (setpriv, when the host is root): bound at INSIDE.setpriv with its libraries. */
  setpriv?: string;
  /** The tool that sets the resource limits before Node inside (limits.ts): bound at INSIDE.prlimit with its libraries. */
  prlimit?: string;
}

/** Packages the worker loads at run time: isolated-vm, and what its entry requires to find its native file. */
interface NativePackages {
  isolatedVm: string;
  nodeGypBuild: string;
  /** The native file isolated-vm loads on this host. */
  addon: string;
}

/** The view for `request`. Library lists come from `ldd` once per host process. */
export function wallView(request: ViewRequest): WallView {
  const packages = nativePackages(request.files[0]);
  const binds: Bind[] = [];
  const readable: string[] = [];
  const entries = new Map<string, string>();
  const add = (source: string, dest: string, read = true) => {
    binds.push({ source, dest });
    if (read) readable.push(dest);
  };
  add(process.execPath, INSIDE.node, false);
  const packageJson = join(dirname(dirname(request.files[0])), "package.json");
  // The package scope says the dist files are ES modules.
  if (existsSync(packageJson)) add(packageJson, INSIDE.packageJson);
  for (const file of request.files) {
    const dest = `${INSIDE.dist}/${basename(file)}`;
    add(file, dest);
    entries.set(file, dest);
  }
  add(packages.isolatedVm, `${INSIDE.modules}/isolated-vm`);
  add(packages.nodeGypBuild, `${INSIDE.modules}/node-gyp-build`);
  const binaries = [process.execPath, packages.addon];
  if (request.setpriv) {
    add(request.setpriv, INSIDE.setpriv, false);
    binaries.push(request.setpriv);
  }
  if (request.prlimit) {
    add(request.prlimit, INSIDE.prlimit, false);
    binaries.push(request.prlimit);
  }
  for (const library of sharedLibraries(binaries)) add(library, library, false);
  return { binds, readable, entries, env: nativeLibc(packages.addon) };
}

/** isolated-vm and node-gyp-build as Node would resolve them from the worker entry. */
function nativePackages(entry: string): NativePackages {
  const fromEntry = createRequire(entry);
  const isolatedVmJson = fromEntry.resolve("isolated-vm/package.json");
  const fromIsolatedVm = createRequire(isolatedVmJson);
  const nodeGypBuildJson = fromIsolatedVm.resolve("node-gyp-build/package.json");
  const isolatedVm = realpathSync(dirname(isolatedVmJson));
  const nodeGypBuild = fromIsolatedVm("node-gyp-build") as { path(dir: string): string };
  return { isolatedVm, nodeGypBuild: realpathSync(dirname(nodeGypBuildJson)), addon: nodeGypBuild.path(isolatedVm) };
}

/*
 * node-gyp-build tells glibc from musl by looking for /etc/alpine-release, which the wall hides and the
 * permission model refuses to look for: tell it which the host picked (it reads LIBC first).
 */
export function nativeLibc(addon: string): Record<string, string> {
  return { LIBC: /\.musl\.node$/.test(addon) ? "musl" : "glibc" };
}

const librariesOf = new Map<string, string[]>();

/** The shared libraries (and the dynamic loader) `binaries` need, from one `ldd`; none for static binaries. */
export function sharedLibraries(binaries: string[]): string[] {
  const key = binaries.join("\0");
  let libraries = librariesOf.get(key);
  if (libraries === undefined) {
    libraries = [...new Set(parseLdd(runLdd(binaries)))];
    librariesOf.set(key, libraries);
  }
  return libraries;
}

function runLdd(binaries: string[]): string {
  try {
    return execFileSync("ldd", binaries, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    // ldd fails when any file is static; the others are still listed.
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    if (/not a dynamic executable|statically linked/.test(stdout + stderr)) return stdout;
    throw new Error(
      `cannot list the shared libraries of ${binaries.join(", ")} (ldd: ${(stdout + stderr).trim() || (error as Error).message})`,
    );
  }
}

/** `ldd` lines: `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` and `/lib64/ld-linux-x86-64.so.2 (0x...)`. */
export function parseLdd(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split("\n")) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (match) paths.push(match[1]);
  }
  return paths;
}
