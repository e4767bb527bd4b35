import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { repoRoot, runCli, runCommand } from "../helpers/cli.js";

/*
 * A project made by `hookbox init` in a directory where hookbox is installed (node_modules/hookbox above it, as
 * `npm i -D hookbox` leaves it): `npx hookbox test` and `npm test` pass, and changing the policy's limit fails
 * exactly the cases that depend on it.
 */

// npm run puts node_modules/.bin of the project and every directory above it on PATH; node is this one.
const run = (command: string, args: string[], cwd: string) =>
  runCommand(command, args, { cwd, env: { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` } });

describe("hookbox init writes the policy's tests", () => {
  it("npx hookbox test and npm test pass in the new project; a changed limit fails exactly the cases that depend on it", async () => {
    const root = mkdtempSync(join(tmpdir(), "hookbox-init-tests-"));
    mkdirSync(join(root, "node_modules", ".bin"), { recursive: true });
    symlinkSync(repoRoot, join(root, "node_modules", "hookbox"));
    symlinkSync(join(repoRoot, "bin", "hookbox.js"), join(root, "node_modules", ".bin", "hookbox"));
    const dir = join(root, "refunds");
    const init = await runCli(["init", dir]);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("policy.cases.json, policy.test.mjs");

    const cases = await run(process.execPath, [join(root, "node_modules", ".bin", "hookbox"), "test"], dir);
    expect(cases.stderr).toBe("");
    expect(cases.stdout).toContain("8 passed, 0 failed");
    expect(cases.code).toBe(0);
    const npm = await run("npm", ["test"], dir);
    expect(npm.stdout).toContain("8 passed, 0 failed");
    expect(npm.stdout).toMatch(/^ℹ pass 3$/m);
    expect(npm.code).toBe(0);

    const policy = join(dir, "policy.ts");
    writeFileSync(policy, readFileSync(policy, "utf8").replace("const REFUND_LIMIT = 100;", "const REFUND_LIMIT = 150;"));
    const changed = await run(process.execPath, [join(root, "node_modules", ".bin", "hookbox"), "test"], dir);
    expect(changed.code).toBe(1);
    const failed = changed.stdout.split("\n").filter((line) => line.startsWith("FAIL"));
    expect(failed).toEqual([
      "FAIL policy.cases.json: refunds over the limit (100) are denied",
      "FAIL policy.cases.json: the scripted run: no refund over the limit (100) ever starts",
    ]);
    expect(changed.stdout).toContain('action: expected "deny", got "none"');
    expect(changed.stdout).toMatch(/at policy\.ts:\d+ \(beforeToolCall\)/);
    expect(changed.stdout).toMatch(/events\[0\]: expected no event like .*"\$gt":100.*, got seq \d+: .*"amount":120/);
    const npmChanged = await run("npm", ["test"], dir);
    expect(npmChanged.code).not.toBe(0);
  }, 180_000);
});
