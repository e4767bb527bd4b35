import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hookboxBin, repoRoot } from "../helpers/cli.js";
import { api, startServe } from "../server/serve-process.js";
import { writeFixture } from "../server/fixture.js";
import { descendants, waitUntil } from "../server/processes.js";
import { wallLauncher } from "../helpers/wall.js";
import { createSandboxPool } from "../../src/sandbox/index.js";

/*
 * From the host, while a script runs: the real `hookbox serve` (its store, its config, tenant keys and a
 * secret in its environment) serves a run whose hook spins in the sandbox; the test finds the process
 * burning that CPU and reads what the kernel says about it.
 */

const SECRET = `s3cret-${process.pid}-${Date.now()}`;
const KEY = `acme-key-${process.pid}`;
const spinner = `import { defineScript } from "hookbox";
export default defineScript({ name: "spin", hooks: { beforeToolCall(p) { const end = Date.now() + 4000; while (Date.now() < end) {} } } });
`;

/** CPU ticks (user + system) a process has used, from /proc/PID/stat. */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The descendant of `root` that burns at least `ticks` of CPU while we watch: the one running the script. */
async function busyDescendant(root: number, ticks: number): Promise<number> {
  const start = new Map(descendants(root).map((pid) => [pid, cpuTicks(pid)]));
  let busy: number | undefined;
  await waitUntil(
    () => (busy = [...start].find(([pid, before]) => cpuTicks(pid) - before >= ticks)?.[0]) !== undefined,
    10_000,
    "a sandbox process to run the spinning hook",
  );
  return busy!;
}

describe("the second wall from outside", () => {
  it("the process running a script holds no host secret, is not root, has its own network and sees no store, config or /work", async () => {
    wallLauncher(); // fails with an install hint where bubblewrap is missing
    const fixture = writeFixture([
      {
        name: "acme",
        key: KEY,
        envKey: "HOOKBOX_TEST_ACME_KEY",
        steps: [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }],
        scripts: { "spin.ts": spinner },
        limits: { cpuMs: 20_000, wallMs: 20_000 },
      },
    ]);
    const server = await startServe({
      config: fixture.config,
      store: fixture.store,
      env: { HOOKBOX_TEST_ACME_KEY: KEY, HOOKBOX_TEST_SECRET: SECRET },
    });
    try {
      const client = api(server.url, KEY);
      const { body: session } = await client.request("POST", "/v1/sessions", {});
      const { status, body: run } = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
      expect(status).toBe(202);

      const pid = await busyDescendant(server.child.pid!, 30);
      // The process running guest code is the walled Node, not bwrap.
      expect(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]).toBe("/hookbox/bin/node");

      const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      expect(environ).not.toContain(SECRET);
      expect(environ).not.toContain(KEY);
      const names = environ
        .split("\0")
        .filter(Boolean)
        .map((entry) => entry.slice(0, entry.indexOf("=")));
      expect(names.sort()).toEqual(["LIBC", "PWD"]);

      const uids = /^Uid:\s+(.*)$/m
        .exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]
        .split(/\s+/)
        .map(Number);
      expect(uids.every((uid) => uid !== 0)).toBe(true);
      if (process.getuid?.() === 0) expect(uids).toEqual([65534, 65534, 65534, 65534]);

      for (const ns of ["net", "pid", "ipc", "uts", "mnt"])
        expect(readlinkSync(`/proc/${pid}/ns/${ns}`)).not.toBe(readlinkSync(`/proc/self/ns/${ns}`));

      const root = `/proc/${pid}/root`;
      expect(existsSync(`${root}/hookbox/dist/sandbox-worker.js`)).toBe(true); // we are looking at its root
      expect(existsSync(fixture.store)).toBe(true); // and these exist on the host
      expect(existsSync(fixture.config)).toBe(true);
      for (const hidden of [fixture.store, fixture.config, fixture.dir, "/work", "/root", "/home", "/etc", process.cwd()])
        expect(existsSync(`${root}${hidden}`), `${hidden} inside the wall`).toBe(false);

      // And the run completes: the wall does not get in the way of the script.
      await waitUntil(
        () => existsSync(fixture.log) && readFileSync(fixture.log, "utf8").includes("tool "),
        20_000,
        "the tool to run after the hook",
      );
      expect(run.runId).toBeTypeOf("string");
    } finally {
      await server.stop();
    }
  });

  it("a worker's mount table: every mount point is a path of the wall's own, and the only host paths it names are the files bound in", async () => {
    wallLauncher();
    const pool = createSandboxPool({ workers: 1, prewarm: true, wall: "auto" });
    try {
      let pid: number | undefined;
      await waitUntil(
        () => (pid = pool.workers()[0]?.pid) !== undefined && readCmdline(pid).startsWith("/hookbox/bin/node "),
        10_000,
        "the walled worker to start",
      );
      // What /proc/self/mountinfo says inside: the mount point (field 5) and, for a bind, its source path on
      // the host, relative to the root of the filesystem it lies on (field 4).
      const mounts = readFileSync(`/proc/${pid}/mountinfo`, "utf8")
        .trim()
        .split("\n")
        .map((line) => {
          const fields = line.split(" ");
          return { source: fields[3]!, point: fields[4]!, type: fields[fields.indexOf("-") + 1]! };
        });
      const insidePaths = /^\/$|^\/hookbox(\/|$)|^\/proc(\/|$)|^\/dev(\/|$)|^\/tmp$|^\/(usr\/)?lib(32|64|x32)?\//;
      for (const mount of mounts) expect(mount.point, `mount point ${mount.point}`).toMatch(insidePaths);
      // hookbox's own files, where they lie on this host; the rest may only be system files (libraries, setpriv).
      const own = [
        process.execPath,
        join(repoRoot, "package.json"),
        join(repoRoot, "dist/sandbox-worker.js"),
        join(repoRoot, "dist/runtime.js"),
      ]
        .concat(["isolated-vm", "node-gyp-build"].map((name) => join(repoRoot, "node_modules", name)))
        .map((path) => realpathSync(path));
      const binds = mounts.filter((mount) => mount.source !== "/" && !["proc", "devtmpfs", "tmpfs"].includes(mount.type));
      expect(binds.length).toBeGreaterThan(0);
      for (const bind of binds) {
        const ours = own.some((path) => path.endsWith(bind.source));
        expect(ours || /^\/(usr\/)?(lib(32|64|x32)?|s?bin)\//.test(bind.source), `the host path ${bind.source} at ${bind.point}`).toBe(
          true,
        );
      }
      // And each of hookbox's own files is there under /hookbox, named by its host path: what docs/sandbox.md says.
      for (const path of own)
        expect(
          binds.some((bind) => path.endsWith(bind.source) && bind.point.startsWith("/hookbox/")),
          path,
        ).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it("a descriptor the host holds without close-on-exec is closed by the worker process running the script", async () => {
    wallLauncher();
    const dir = mkdtempSync(join(tmpdir(), "hookbox-wall-fd-"));
    const leak = join(dir, "host-log.txt");
    writeFileSync(
      join(dir, "spin.ts"),
      `export default { tools: [{ name: "work", description: "spins", handler() { const end = Date.now() + 20000; while (Date.now() < end) {} return {}; } }] };`,
    );
    writeFileSync(
      join(dir, "model.json"),
      JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "work", args: {} }] }, { text: "done" }] }),
    );
    // The host's parent leaves fd 100 open on a host file (as a careless supervisor or shell would). Node marks
    // the descriptors it inherits close-on-exec only up to the first gap past fd 15: fd 100 stays inheritable.
    const host = spawn(
      "bash",
      [
        "-c",
        'exec 100>>"$LEAK"; exec "$NODE" "$BIN" run "$DIR/spin.ts" --model "scripted:$DIR/model.json" --prompt go --cpu-ms 30000 --wall-ms 30000',
      ],
      { cwd: repoRoot, env: { ...process.env, LEAK: leak, NODE: process.execPath, BIN: hookboxBin, DIR: dir } },
    );
    let stdout = "";
    host.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => host.on("exit", (code) => resolve(code)));
    try {
      // The tool starts once its worker answered the script's load: by then the worker ran everything it runs at start.
      await waitUntil(() => stdout.includes("tool work("), 20_000, "the tool to start");
      // The Node process inside the wall running the worker entry (not bwrap, whose arguments name it too).
      const worker = descendants(host.pid!).find(
        (pid) => readCmdline(pid).startsWith("/hookbox/bin/node ") && readCmdline(pid).includes("/hookbox/dist/sandbox-worker.js"),
      );
      expect(worker, "the walled worker process").toBeDefined();
      // The premise: the host holds the descriptor without close-on-exec, so the worker inherits it through
      // bwrap, and the host names it for the worker to close...
      expect(readlinkSync(`/proc/${host.pid}/fd/100`)).toBe(leak);
      expect(Number.parseInt(/^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${host.pid}/fdinfo/100`, "utf8"))![1], 8) & 0o2000000).toBe(0);
      expect(readCmdline(worker!)).toMatch(/--hookbox-close-fds=(\d+,)*100(,|\s|$)/);
      // ...and the worker closed it before running anything of a script's.
      expect(fdTargets(worker!)).not.toContain(leak);
    } finally {
      host.kill("SIGKILL");
      await exited;
    }
  });
});

/** Where each descriptor of `pid` points. */
function fdTargets(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return "";
    }
  });
}

function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}
