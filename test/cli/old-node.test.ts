import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli.js";

/**
 * An unsupported Node (its V8 line no longer gets security fixes) must refuse every command with one line. The
 * machine's own /usr/bin/node is used when it is older than 24 (these machines ship 20); otherwise Node 22 is
 * fetched from the npm registry with the repo's own script, so the test always runs on a real old Node.
 */
function oldNode(): string {
  if (existsSync("/usr/bin/node")) {
    const version = execFileSync("/usr/bin/node", ["-p", "process.versions.node"], { encoding: "utf8" }).trim();
    if (Number(version.split(".")[0]) < 24) return "/usr/bin/node";
  }
  const bin = execFileSync("bash", [join(repoRoot, "scripts/fetch-node.sh"), "22"], { encoding: "utf8" }).trim();
  return join(bin, "node");
}

describe("an unsupported Node", () => {
  it("refuses every command with exit 2 and one line that says which Node is needed and why", () => {
    const node = oldNode();
    const major = Number(execFileSync(node, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" }).trim());
    expect(major).toBeLessThan(24);
    for (const args of [["--help"], ["run", "x.ts", "--prompt", "hi"], ["check", "x.ts"], ["serve"], ["doctor"], ["replay"]]) {
      const r = spawnSync(node, [join(repoRoot, "bin/hookbox.js"), ...args], { encoding: "utf8", timeout: 30_000 });
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      const lines = r.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^hookbox: Node \d+\.\d+\.\d+ is not supported; hookbox needs Node 24 or 26 .*security fixes/);
      expect(lines[0]).toContain("scripts/fetch-node.sh 26");
    }
  }, 120_000);

  it("refuses to load the library with the CLI's same line (error code UNSUPPORTED_NODE), before anything half-starts", () => {
    const node = oldNode();
    const cli = spawnSync(node, [join(repoRoot, "bin/hookbox.js"), "doctor"], { encoding: "utf8", timeout: 30_000 });
    const program = `import(${JSON.stringify(join(repoRoot, "dist/index.js"))}).then(
      (hookbox) => { hookbox.createSandboxPool(); console.log("loaded"); },
      (error) => console.log(JSON.stringify({ code: error.code, message: error.message })),
    );`;
    const r = spawnSync(node, ["--input-type=module", "-e", program], { encoding: "utf8", timeout: 30_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ code: "UNSUPPORTED_NODE", message: cli.stderr.trim() });
  }, 60_000);

  // npm checks engines before any script of the package runs, so this block is npm's, not hookbox's one line; the
  // README's Quick start shows it (a preinstall script would run only after every dependency was unpacked).
  it("npm ci stops with npm's EBADENGINE block and nothing else, before it fetches or builds anything (engine-strict in the committed .npmrc)", () => {
    const node = oldNode();
    const version = execFileSync(node, ["-p", "process.versions.node"], { encoding: "utf8" }).trim();
    const dir = mkdtempSync(join(tmpdir(), "hookbox-old-npm-"));
    for (const file of ["package.json", "package-lock.json", ".npmrc"]) copyFileSync(join(repoRoot, file), join(dir, file));
    const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], {
      cwd: dir,
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ""}`, npm_config_update_notifier: "false" },
    });
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe("");
    // npm's own configuration warnings (from the machine's npmrc) are not the install's output.
    const lines = r.stderr.split("\n").filter((line) => line && !/^npm warn (config|Unknown)/i.test(line));
    // Only npm's error block: no dependency's warning, no script's output, no compiler.
    expect(lines.filter((line) => !/^npm (error|ERR!) /.test(line))).toEqual([]);
    expect(lines.join("\n")).toMatch(/code EBADENGINE/);
    expect(lines.join("\n")).toContain('Required: {"node":">=24"}');
    expect(lines.join("\n")).toMatch(new RegExp(`Actual: +\\{"node":"v${version.replaceAll(".", "\\.")}"`));
    expect(r.stderr).not.toMatch(/gyp|g\+\+/);
    expect(existsSync(join(dir, "node_modules"))).toBe(false);
  }, 120_000);

  it("the README shows the block npm prints and says what to do", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const block = /```text\n(npm error code EBADENGINE\n[\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(block).toContain('npm error notsup Required: {"node":">=24"}');
    expect(readme).toContain('export PATH="$(bash scripts/fetch-node.sh 26):$PATH"');
  });
});
