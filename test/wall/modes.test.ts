import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { runCli } from "../helpers/cli.js";
import { writeFixture } from "../server/fixture.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { wallMissing } from "../helpers/wall.js";
import { script } from "../sandbox/helpers.js";

/* sandbox.wall: auto / required / none, as the CLI, the serve config and the library take it. */

const demo = [
  "run",
  "examples/refund-policy/policy.ts",
  "--model",
  "scripted:examples/refund-policy/model.json",
  "--host-tools",
  "examples/refund-policy/tools.mjs",
  "--prompt",
  "Refund order A17",
  "--json",
];
/** A host where bubblewrap cannot be found. */
const noBwrap = { HOOKBOX_BWRAP: "/nonexistent/bwrap" };

describe("--wall", () => {
  it("auto without bubblewrap: the run works, with one warning on stderr saying how to get the wall", async () => {
    const result = await runCli(demo, { env: noBwrap });
    expect(result.code).toBe(0);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^hookbox: warning: sandbox workers run without the second wall \(HOOKBOX_BWRAP=\/nonexistent\/bwrap .*install bubblewrap/,
    );
  });

  it("required without bubblewrap: refuses to start, one line naming the reason", async () => {
    const result = await runCli([...demo, "--wall", "required"], { env: noBwrap });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      'hookbox run: WALL_UNAVAILABLE: sandbox.wall is "required" but the second wall cannot start here: HOOKBOX_BWRAP=/nonexistent/bwrap is not an executable\n',
    );
  });

  it("required with bubblewrap, and none: both run the demo, silently", async () => {
    for (const wall of ["required", "none"]) {
      const result = await runCli([...demo, "--wall", wall]);
      expect(result.stderr, wallMissing(`--wall ${wall}`)).toBe("");
      expect(result.code).toBe(0);
    }
  });

  it("an unknown value is a usage error (run, resume, serve, doctor)", async () => {
    const result = await runCli([...demo, "--wall", "sometimes"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("hookbox run: USAGE: --wall sometimes: expected one of auto, required, none\n");
    for (const command of [
      ["resume", "--store", "x.db", "--session", "s"],
      ["serve", "--port", "0", "--store", "x.db", "--config", "c.json"],
      ["doctor"],
    ]) {
      const other = await runCli([...command, "--wall", "sometimes"]);
      expect(other.code).toBe(2);
      expect(other.stderr).toBe(`hookbox ${command[0]}: USAGE: --wall sometimes: expected one of auto, required, none\n`);
    }
  });
});

describe("server.wall", () => {
  const tenant = { name: "acme", key: "k", steps: [{ text: "hi" }] };

  it("required without bubblewrap: serve refuses to start", async () => {
    const fixture = writeFixture([tenant], { server: { wall: "required" } });
    const result = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", fixture.config], { env: noBwrap });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^hookbox serve: WALL_UNAVAILABLE: sandbox.wall is "required" but the second wall cannot start here/);
  });

  it("an unknown value names the field; unknown fields are still refused", async () => {
    const fixture = writeFixture([tenant], { server: { wall: "sometimes" } });
    const result = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", fixture.config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`config ${fixture.config}: server.wall:`);
    const misspelt = writeFixture([tenant], { server: { walls: "none" } });
    const unknown = await runCli(["serve", "--port", "0", "--store", misspelt.store, "--config", misspelt.config]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown field "walls"');
  });
});

describe("the library option", () => {
  it("createSandboxPool({ wall }) walls the workers or, with none, leaves them plain", async () => {
    const walled = createSandboxPool({ workers: 1, wall: "required", prewarm: true });
    const plain = createSandboxPool({ workers: 1, wall: "none", prewarm: true });
    try {
      expect(walled.wall).toBe("bubblewrap");
      expect(plain.wall).toBe("none");
      // A load answered means the worker's Node process is up.
      for (const pool of [walled, plain]) await pool.tenant("t").load([script("hello", "export default { hooks: {} };")]);
      const [walledWorker] = walled.workers();
      const [plainWorker] = plain.workers();
      expect(plainWorker.pid).toBe(plainWorker.launchedPid);
      expect(walledWorker.pid).not.toBe(walledWorker.launchedPid);
      expect(readFileSync(`/proc/${walledWorker.pid}/cmdline`, "utf8").split("\0")[0]).toBe("/hookbox/bin/node");
    } finally {
      await walled.close();
      await plain.close();
    }
  });
});
