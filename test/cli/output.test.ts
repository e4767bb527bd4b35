import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hookboxBin, jsonLines, repoRoot, runCli, startCli } from "../helpers/cli.js";
import { tmp, writeSteps } from "../helpers/harness.js";
import { runFlagSpec } from "../../src/cli/run-flags.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { onJsonEvents, writeRefundFixture } from "./approval-fixture.js";

/* What the CLI prints about itself (--help) and how it behaves when its reader goes away (EPIPE). */

const commands = ["run", "check", "init", "codegen", "resume", "sessions", "serve", "doctor", "replay"];

/** The flags a command's --help lists, with a value when the help shows one. */
function helpFlags(help: string): { flag: string; value?: string }[] {
  return [...help.matchAll(/^ {2}(--[\w-]+)( \S+)?/gm)].map(([, flag, value]) => ({ flag: flag!, ...(value ? { value: "1" } : {}) }));
}

describe("hookbox --help and hookbox <command> --help", () => {
  it("hookbox --help lists every command and says how to get a command's options", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const command of commands) expect(r.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    expect(r.stdout).toContain("hookbox <command> --help");
  });

  it.each(commands)(
    "hookbox %s --help prints its usage and options, exit 0; every listed flag is one the command accepts",
    async (command) => {
      for (const ask of ["--help", "-h"]) {
        const r = await runCli([command, ask]);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toBe("");
        expect(r.stdout.startsWith(`usage: hookbox ${command}`)).toBe(true);
      }
      const help = (await runCli([command, "--help"])).stdout;
      // run's flags are compared with its parser's own table below, both ways, without a process per flag.
      for (const { flag, value } of command === "run" ? [] : helpFlags(help)) {
        // A known flag is parsed past, so the parser stops at the unknown one after it.
        const r = await runCli([command, flag, ...(value ? [value] : []), "--zz-unknown"]);
        expect(r.code, `${command} ${flag}`).toBe(2);
        expect(`${r.stderr}`, `${command} ${flag}`).toContain("--zz-unknown");
      }
    },
  );

  it("hookbox run --help lists every flag run accepts, among them --approval-timeout-ms and --max-finish-continues", async () => {
    const help = (await runCli(["run", "--help"])).stdout;
    const listed = new Set(helpFlags(help).map(({ flag }) => flag));
    const accepted = Object.keys(runFlagSpec).map((name) => `--${name}`);
    expect(accepted.filter((flag) => !listed.has(flag))).toEqual([]);
    expect([...listed].filter((flag) => !accepted.includes(flag))).toEqual([]);
    expect(listed).toContain("--approval-timeout-ms");
    expect(listed).toContain("--max-finish-continues");
  });
});

describe("stdout closed by its reader", () => {
  it('the run stops: cancelled with reason "stdout closed", nothing on stderr, exit 141 (as SIGPIPE)', async () => {
    const fixture = writeRefundFixture();
    const store = join(fixture.dir, "store.db");
    const cli = startCli(["run", ...fixture.args, "--json", "--store", store, "--session", "s1"]);
    // The run waits at the approval; the reader goes away, then the answer lets the run write again.
    onJsonEvents(cli.child, (event) => {
      if (event.type !== "approval.requested") return;
      cli.child.stdout.destroy();
      cli.child.stdin.write(`${JSON.stringify({ approve: event.pauseId })}\n`);
    });
    const result = await cli.done;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(141);
    const { openStore } = await import("../../src/store/index.js");
    const db = openStore(store);
    try {
      const [run] = await db.listRuns("s1");
      expect(run).toMatchObject({ status: "cancelled" });
    } finally {
      await db.close();
    }
  });

  it("hookbox run --json | head -1 prints one line and no EPIPE stack trace", () => {
    const dir = tmp("hookbox-epipe-");
    // The tool returns only once head has exited (cat after it sees its end), so the events after it meet a closed pipe.
    const gone = join(dir, "head-gone");
    writeFileSync(
      join(dir, "tools.mjs"),
      `import { existsSync } from "node:fs";
export default [{ name: "slow", description: "waits for head to exit", parameters: { type: "object" }, handler: async () => {
  for (let i = 0; i < 600 && !existsSync(${JSON.stringify(gone)}); i++) await new Promise((r) => setTimeout(r, 50));
  return { ok: true };
} }];\n`,
    );
    const model = writeSteps([{ toolCalls: [{ id: "c1", name: "slow", args: {} }] }, { text: "done" }]);
    for (const json of [["--json"], []]) {
      const command = [process.execPath, hookboxBin, "run", "--model", `scripted:${model}`, "--host-tools", join(dir, "tools.mjs")]
        .concat(["--prompt", "x", ...json])
        .map((word) => `'${word}'`)
        .join(" ");
      rmSync(gone, { force: true });
      const pipeline = `${command} 2>"${dir}/stderr" < /dev/null | head -1 | { cat; touch "${gone}"; }; echo "status \${PIPESTATUS[0]}" >&2`;
      const r = spawnSync("bash", ["-c", pipeline], {
        cwd: repoRoot,
        encoding: "utf8",
        timeout: 60_000,
      });
      const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}\nhookbox's stderr: ${readFileSync(`${dir}/stderr`, "utf8")}`;
      expect(r.stdout.trim().split("\n"), said).toHaveLength(1);
      if (json.length) expect(jsonLines(r.stdout)[0] as HookboxEvent).toMatchObject({ type: "run-started" });
      expect(r.stderr.trim(), said).toBe("status 141");
      expect(readFileSync(`${dir}/stderr`, "utf8"), said).toBe("");
    }
  }, 60_000);
});
