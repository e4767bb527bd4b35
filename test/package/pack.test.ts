import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";

/*
 * The newcomer's path, from the tarball `npm pack` makes (contract: packaging): install it into a fresh project,
 * `hookbox init`, `check`, `run`, and a typed host program that imports the library. Dependencies come from the
 * npm cache (`--prefer-offline`); dist/ is already built by the test run, so packing skips the build scripts.
 */
const fixtures = join(repoRoot, "test/fixtures/package");
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`, npm_config_update_notifier: "false" };
const depVersions = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).dependencies as Record<string, string>;

let app: string;
let packed: string[];
let install: { code: number | null; output: string };

function sh(command: string, args: string[], cwd = app) {
  const r = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: 180_000 });
  // npm's own configuration warnings (from the machine's npmrc) are not the tool's output.
  const stderr = r.stderr.replace(/^npm warn .*\n/gm, "");
  return { code: r.status, stdout: r.stdout, stderr, output: `${r.stdout}${stderr}` };
}

beforeAll(() => {
  const dir = tmp("hookbox-pack-");
  const listing = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], {
    cwd: repoRoot,
    env,
    encoding: "utf8",
  });
  const [info] = JSON.parse(listing) as { filename: string; files: { path: string }[] }[];
  packed = info!.files.map((file) => file.path);
  app = join(dir, "app");
  execFileSync("mkdir", [app]);
  // The allowScripts docs/library.md recommends: no dependency's install script runs.
  const allowScripts = { "isolated-vm": false, esbuild: false, hookbox: false };
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "my-app", private: true, type: "module", allowScripts }));
  install = sh("npm", [
    "install",
    "--prefer-offline",
    "--no-audit",
    "--no-fund",
    join(dir, info!.filename),
    `typescript@${depVersions.typescript}`,
    // The current @types/node, not the one hookbox builds with: the published declarations must hold with it.
    "@types/node@latest",
  ]);
  expect(install.code, install.output).toBe(0);
}, 240_000);

// Generous: each step spawns npm, tsc or the CLI on a machine shared with the rest of the suite.
describe("the packed package in a fresh project", { timeout: 180_000 }, () => {
  it("carries the bin, dist with declarations and the web inspector, the script types and fetch-node.sh, and no tests or sources", () => {
    for (const file of ["bin/hookbox.js", "dist/cli.js", "dist/index.js", "dist/sandbox-worker.js", "dist/runtime.js"])
      expect(packed).toContain(file);
    // The web inspector, served by `hookbox serve` at /ui/ from the package alone (no CDN).
    for (const file of ["dist/ui/index.html", "dist/ui/app.js", "dist/ui/app.css"]) expect(packed).toContain(file);
    // One rolled-up declaration file (scripts/declarations.mjs), not tsc's file per module.
    expect(packed).toContain("dist/index.d.ts");
    expect(packed.filter((file) => file.startsWith("dist/types/"))).toEqual([]);
    expect(packed).toContain("types/hookbox.d.ts");
    expect(packed).toContain("scripts/fetch-node.sh");
    expect(packed.filter((file) => /^(test|src|codegen|runtime)\/|\.tsbuildinfo$/.test(file))).toEqual([]);
  });

  it("npx hookbox init / check / run work as the contract's newcomer path says", () => {
    const init = sh("npx", ["hookbox", "init", "my-policy"]);
    expect(init.code, init.output).toBe(0);
    // Installed: the script types come from the package (export condition), not a copy.
    expect(existsSync(join(app, "my-policy/types"))).toBe(false);
    expect(JSON.parse(readFileSync(join(app, "my-policy/tsconfig.json"), "utf8")).compilerOptions.customConditions).toEqual([
      "hookbox-script",
    ]);

    copyFileSync(join(fixtures, "extra-script.ts"), join(app, "my-policy/extra.ts"));
    const editor = sh("npx", ["tsc", "-p", "my-policy"]);
    expect(editor.output).toBe("");
    expect(editor.code).toBe(0);
    const check = sh("npx", ["hookbox", "check", "my-policy/policy.ts", "my-policy/extra.ts"]);
    expect(check.output).toBe("");
    expect(check.code).toBe(0);

    const run = sh("npx", [
      "hookbox",
      "run",
      "my-policy/policy.ts",
      "--model",
      "scripted:my-policy/model.json",
      "--prompt",
      "Refund A17",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(events.filter((e) => e.type === "hook-decision").map((e) => e.decision.action)).toContain("deny");
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("installs with no install script run and nothing compiled, and npm lists none as uncovered by allowScripts", () => {
    expect(install.output).not.toMatch(/allowScripts/);
    expect(existsSync(join(app, "node_modules/isolated-vm/build"))).toBe(false);
  });

  it("the declarations a host reads are one file, clean under strict and skipLibCheck false", () => {
    for (const file of ["host.ts", "tsconfig.json"]) copyFileSync(join(fixtures, file), join(app, file));
    expect(JSON.parse(readFileSync(join(app, "tsconfig.json"), "utf8")).compilerOptions).toMatchObject({
      strict: true,
      skipLibCheck: false,
    });
    const listed = sh("npx", ["tsc", "-p", ".", "--listFilesOnly"]);
    const declarations = listed.stdout.split("\n").filter((file) => file.includes("node_modules/hookbox/"));
    expect(declarations.map((file) => file.replace(/^.*node_modules\/hookbox\//, ""))).toEqual(["dist/index.d.ts"]);
    const typed = sh("npx", ["tsc", "-p", "."]);
    expect(typed.output).toBe("");
  });

  it("names no internal: loop, sandbox, session and store classes are neither importable nor declared", () => {
    // The only classes the declarations hold: the three a host constructs or catches, and two it receives.
    const text = readFileSync(join(app, "node_modules/hookbox/dist/index.d.ts"), "utf8");
    expect([...text.matchAll(/^(?:export )?declare (?:abstract )?class (\w+)/gm)].map((match) => match[1]).sort()).toEqual([
      "HookboxError",
      "ScriptedModel",
      "Session",
      "SessionManager",
      "TypedKey",
    ]);
    expect(text).not.toMatch(/\b(HookChain|Stepper|WorkerProcess|Supervisor|TenantSandboxImpl|SqliteStore|RunFeed|SessionOwner)\b/);

    const internals = ["HookChain", "Stepper", "WorkerProcess", "TenantSandboxImpl", "SqliteStore", "RunFeed", "SessionOwner"];
    writeFileSync(
      join(app, "internals.ts"),
      [
        `import { ${internals.join(", ")} } from "hookbox";`,
        `import { HookChain as DeepHookChain } from "hookbox/dist/types/loop/hook-chain.js";`,
        `import { Session, SessionManager, createSandboxPool } from "hookbox";`,
        `export const used = [${internals.join(", ")}, DeepHookChain, SessionManager, createSandboxPool];`,
        `export const made = new Session();`,
        "",
      ].join("\n"),
    );
    const checked = sh("npx", ["tsc", "--noEmit", "--strict", "--module", "nodenext", "--types", "node", "internals.ts"]);
    const errors = [...checked.stdout.matchAll(/internals\.ts\((\d+),\d+\): error (TS\d+): (.*)/g)].map(([, line, code, message]) => ({
      line: Number(line),
      code,
      message,
    }));
    // Each internal name: "has no exported member" (TS2724 when it adds "did you mean" a public one); the deep path: no such module (the exports map closes it);
    // Session: a type only (a session comes from its manager).
    for (const name of internals)
      expect(errors).toContainEqual(
        expect.objectContaining({ line: 1, code: expect.stringMatching(/^TS(2305|2724)$/), message: expect.stringContaining(`'${name}'`) }),
      );
    expect(errors).toContainEqual(expect.objectContaining({ line: 2, code: "TS2307" }));
    expect(errors).toContainEqual(expect.objectContaining({ line: 5, code: "TS1362", message: expect.stringContaining("'Session'") }));
    expect(errors.filter((error) => error.line === 3 || error.line === 4)).toEqual([]);
    expect(errors).toHaveLength(internals.length + 2);
  });

  it("a TypeScript host program imports the library, type-checks with tsc, and runs a loop", () => {
    if (!existsSync(join(app, "my-policy/policy.ts"))) sh("npx", ["hookbox", "init", "my-policy"]);
    for (const file of ["host.ts", "tsconfig.json"]) copyFileSync(join(fixtures, file), join(app, file));
    const typed = sh("npx", ["tsc", "-p", "."]);
    expect(typed.output).toBe("");
    expect(typed.code).toBe(0);
    // A type error in host code is caught: the declarations are real, not `any`.
    writeFileSync(join(app, "broken.ts"), `import { createSandboxPool } from "hookbox";\ncreateSandboxPool({ workers: "two" });\n`);
    const broken = sh("npx", ["tsc", "--noEmit", "--strict", "--module", "nodenext", "--types", "node", "broken.ts"]);
    expect(broken.output).toMatch(/broken\.ts\(2,\d+\): error TS2322/);

    const host = sh(process.execPath, ["host.ts"]);
    expect(host.code, host.stderr).toBe(0);
    const outcome = JSON.parse(host.stdout.trim().split("\n").at(-1)!);
    expect(outcome).toMatchObject({ status: "completed", text: expect.stringContaining("need a human") });
    expect(outcome.types[0]).toBe("run-started");
    expect(outcome.types.at(-1)).toBe("run-finished");
    expect(readdirSync(app)).toContain("store.db");
  });
});
