import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hookboxBin, repoRoot } from "../helpers/cli.js";
import { api, startServe } from "../server/serve-process.js";
import { writeFixture } from "../server/fixture.js";
import { descendants, waitUntil } from "../server/processes.js";
import { wallLauncher } from "../helpers/wall.js";

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

  it("a descriptor the host inherited without close-on-exec does not reach the process running a script", async () => {
    wallLauncher();
    const dir = mkdtempSync(join(tmpdir(), "hookbox-wall-fd-"));
    const leak = join(dir, "host-log.txt");
    writeFileSync(
      join(dir, "spin.ts"),
      `export default { tools: [{ name: "work", description: "spins", handler() { const end = Date.now() + 4000; while (Date.now() < end) {} return {}; } }] };`,
    );
    writeFileSync(
      join(dir, "model.json"),
      JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "work", args: {} }] }, { text: "done" }] }),
    );
    // The host's parent leaves fd 7 open on a host file (as a careless supervisor or shell would).
    const host = spawn(
      "bash",
      [
        "-c",
        'exec 7>>"$LEAK"; exec "$NODE" "$BIN" run "$DIR/spin.ts" --model "scripted:$DIR/model.json" --prompt go --cpu-ms 20000 --wall-ms 20000',
      ],
      { cwd: repoRoot, env: { ...process.env, LEAK: leak, NODE: process.execPath, BIN: hookboxBin, DIR: dir } },
    );
    const exited = new Promise<number | null>((resolve) => host.on("exit", (code) => resolve(code)));
    try {
      await waitUntil(() => descendants(host.pid!).some((pid) => readCmd(pid) === "/hookbox/bin/node"), 10_000, "the walled worker");
      const worker = descendants(host.pid!).find((pid) => readCmd(pid) === "/hookbox/bin/node")!;
      expect(readlinkSync(`/proc/${host.pid}/fd/7`)).toBe(leak); // the host holds it
      const targets = readdirSync(`/proc/${worker}/fd`).map((fd) => readlinkSync(`/proc/${worker}/fd/${fd}`));
      expect(targets).not.toContain(leak);
      expect(existsSync(`/proc/${worker}/fd/7`) && readlinkSync(`/proc/${worker}/fd/7`) === leak).toBe(false);
    } finally {
      host.kill("SIGKILL");
      await exited;
    }
  });
});

function readCmd(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0];
  } catch {
    return "";
  }
}
