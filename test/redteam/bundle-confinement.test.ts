import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleScript } from "../../src/sandbox/bundler.js";
import { DEFAULT_BUNDLE_BOUNDS } from "../../src/sandbox/bundle-guard.js";
import { runCli } from "../helpers/cli.js";
import { writeSteps } from "../helpers/harness.js";
import { beforePayload, rejection, scriptDir } from "../sandbox/helpers.js";
import { redTeamPool } from "../sandbox/redteam-helpers.js";
import { MAX_STALL_MS, MAX_WALL_STALL_MS, measureStall } from "./stall.js";

/*
 * Red team: a tenant's script tries to read host files while it is bundled. Each case bundles a real
 * directory through the real pool (esbuild included) in this process, the host, and measures its stall.
 */
const { pool, good } = redTeamPool({ workers: 1 });

const SECRET = `SECRET-${Math.random().toString(36).slice(2)}`;
process.env.HOOKBOX_REDTEAM_SECRET = SECRET; // what /proc/self/environ of this host process now holds

/** Files outside every attacker root: the secret as code, as JSON and as text. */
const outside = mkdtempSync(join(scriptDir, "outside-"));
writeFileSync(join(outside, "secret.ts"), `export const secret = "${SECRET}";\n`);
writeFileSync(join(outside, "secret.json"), JSON.stringify({ secret: SECRET }));
writeFileSync(join(outside, "secret.txt"), SECRET);
mkdirSync(join(outside, "node_modules/leak"), { recursive: true });
writeFileSync(join(outside, "node_modules/leak/package.json"), JSON.stringify({ name: "leak", main: "index.js" }));
writeFileSync(join(outside, "node_modules/leak/index.js"), `export const secret = "${SECRET}";\n`);

let tenants = 0;

/** An attacker's project: `main.ts` returns what it imported as a hook result; `files` are written beside it. */
function project(main: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(outside, "attacker-"));
  writeFileSync(
    join(dir, "main.ts"),
    `import { defineScript } from "hookbox";\n${main}\nexport default defineScript({ hooks: { beforeToolCall() { return { action: "skip", result: String(typeof loot === "undefined" ? "" : loot) }; } } });\n`,
  );
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** Loads the project as a fresh tenant; it must be refused with SCRIPT_LOAD, quickly, leaking nothing. */
async function refused(attack: string, dir: string, mentions: string) {
  const {
    value: error,
    busyStallMs,
    stallMs,
    elapsedMs,
  } = await measureStall(attack, () => rejection(pool.tenant(`bundle-attacker-${++tenants}`).load([{ path: join(dir, "main.ts") }])));
  expect(error.code).toBe("SCRIPT_LOAD");
  expect(error.message).toContain(mentions);
  expect(JSON.stringify(error)).not.toContain(SECRET);
  expect(busyStallMs).toBeLessThan(MAX_STALL_MS);
  expect(stallMs).toBeLessThan(MAX_WALL_STALL_MS);
  expect(elapsedMs).toBeLessThan(10_000);
  await good.served();
  return error;
}

describe("red team: bundling reads nothing outside the script's directory", () => {
  it("refuses an absolute import, naming it", async () => {
    const error = await refused(
      "import of an absolute path",
      project(`import { secret as loot } from "${outside}/secret.ts";`),
      "absolute",
    );
    expect(error.message).toContain(`import "${outside}/secret.ts" in main.ts`);
  });

  it("bundles source text whose directory is gone on its own: it imports hookbox, and never a file beside the path it names", async () => {
    // A session's recorded script resumed where its folder no longer exists; `outside` holds the secret one level up.
    const filename = join(outside, "gone", "main.ts");
    const plain = await bundleScript({
      filename,
      source: `import { defineScript } from "hookbox";\nexport default defineScript({ hooks: { beforeToolCall() { return undefined; } } });\n`,
    });
    expect(plain.code).toContain("beforeToolCall");
    const error = await rejection(bundleScript({ filename, source: `import { secret } from "../secret";\nexport default secret;\n` }));
    expect(error.code).toBe("SCRIPT_INVALID");
    expect(error.message).toContain('"../secret"');
    expect(JSON.stringify(error)).not.toContain(SECRET);
  });

  it("refuses ../ escapes: import, require and dynamic import", async () => {
    await refused("../ escape", project(`import { secret as loot } from "../secret";`), "resolves outside the script's directory");
    await refused("../ escape (require)", project(`const loot = require("../secret.json").secret;`), `import "../secret.json"`);
    await refused("../ escape (import())", project(`const loot = () => import("../secret.ts");`), `import "../secret.ts"`);
  });

  it("refuses /proc/self/environ directly, through a symlink and as text", async () => {
    await refused("/proc/self/environ", project(`import loot from "/proc/self/environ";`), `import "/proc/self/environ"`);
    const linked = project(`import loot from "./env.json";`);
    symlinkSync("/proc/self/environ", join(linked, "env.json"));
    await refused("/proc/self/environ (symlink)", linked, `import "./env.json"`);
    await refused(
      "/proc/self/environ (with type text)",
      project(`import loot from "/proc/self/environ" with { type: "text" };`),
      "/proc/self/environ",
    );
  });

  it.each(["/dev/zero", "/dev/urandom"])("%s fails fast, imported or symlinked", async (device) => {
    await refused(`import of ${device}`, project(`import loot from "${device}";`), device);
    const linked = project(`import loot from "./device.js";`);
    symlinkSync(device, join(linked, "device.js"));
    await refused(`import of ${device} (symlink)`, linked, "device.js");
  });

  it("refuses a FIFO by its file type without opening it", async () => {
    const dir = project(`import loot from "./pipe.js";`);
    execFileSync("mkfifo", [join(dir, "pipe.js")]);
    await refused("import of a FIFO", dir, "pipe.js");
  });

  it.each(["text", "bytes", "json", "file"])("refuses import attributes: with { type: %j }", async (type) => {
    const dir = project(`import loot from "./data.json" with { type: "${type}" };`, { "data.json": JSON.stringify({ secret: SECRET }) });
    await refused(`import attribute type ${type}`, dir, "import attributes");
  });

  it("a shipped tsconfig.json with paths does not steer resolution", async () => {
    const dir = project(`import { secret as loot } from "steal/secret";`, {
      "tsconfig.json": JSON.stringify({ compilerOptions: { baseUrl: ".", paths: { "steal/*": [`${outside}/*`, "../*"] } } }),
    });
    await refused("tsconfig.json paths pointing outside", dir, `import "steal/secret"`);
  });

  it("refuses symlinks inside the root that point outside (file and directory)", async () => {
    const file = project(`import { secret as loot } from "./lib";`);
    symlinkSync(join(outside, "secret.ts"), join(file, "lib.ts"));
    await refused("symlink to a file outside", file, "resolves outside");
    const directory = project(`import { secret as loot } from "./shared/secret";`);
    symlinkSync(outside, join(directory, "shared"));
    await refused("symlink to a directory outside", directory, "resolves outside");
  });

  it("refuses a package from a node_modules outside the root", async () => {
    await refused("package from node_modules outside the root", project(`import { secret as loot } from "leak";`), `import "leak"`);
  });

  it("refuses .txt and other non-code files, inside the root too", async () => {
    await refused(".txt import", project(`import loot from "./notes.txt";`, { "notes.txt": SECRET }), "only code and JSON files");
    await refused(".txt import outside", project(`import loot from "../secret.txt";`), `import "../secret.txt"`);
  });

  it("refuses a huge file by its size, before reading it", async () => {
    const dir = project(`import { x as loot } from "./big";`);
    writeFileSync(join(dir, "big.ts"), "");
    truncateSync(join(dir, "big.ts"), 1024 * 1024 * 1024); // 1 GiB, sparse
    await refused("import of a 1 GiB file", dir, "over the 2097152-byte limit per file");
  });

  it("esbuild's parse errors name file:line only, never the content", async () => {
    const error = await refused(
      "parse error quoting a file",
      project(`import loot from "./data.json";`, { "data.json": `{ "a": ${SECRET} }` }),
      "data.json:1:",
    );
    expect(error.message).toContain("esbuild cannot bundle this");
  });

  it("still bundles code, JSON and packages from a node_modules inside the root", async () => {
    const dir = project(`import { greet } from "pkg";\nimport data from "./data.json";\nconst loot = greet(data.name);`, {
      "data.json": JSON.stringify({ name: "inside" }),
      "node_modules/pkg/package.json": JSON.stringify({ name: "pkg", main: "lib/index.js" }),
      "node_modules/pkg/lib/index.js": `export const greet = (name) => "hello " + name;`,
    });
    const sandbox = pool.tenant("bundle-allowed");
    const manifests = await sandbox.load([{ path: join(dir, "main.ts") }]);
    const run = await sandbox.openRun({ runId: "allowed", scripts: manifests });
    expect(await run.callHook("main", "beforeToolCall", beforePayload())).toEqual({ action: "skip", result: "hello inside" });
    await run.close();
  });
});

describe("bundling bounds", () => {
  const bounded = (dir: string, bounds: Partial<typeof DEFAULT_BUNDLE_BOUNDS>) =>
    rejection(bundleScript({ path: join(dir, "main.ts") }, { ...DEFAULT_BUNDLE_BOUNDS, ...bounds }));

  it("an entry file that is a symlink to a file outside its directory is refused", async () => {
    const dir = mkdtempSync(join(outside, "entry-"));
    symlinkSync(join(outside, "secret.ts"), join(dir, "main.ts"));
    const error = await rejection(pool.tenant("bundle-entry-link").load([{ path: join(dir, "main.ts") }]));
    expect(error.code).toBe("SCRIPT_LOAD");
    expect(error.message).toContain("the entry file is refused: it resolves outside the script's directory");
    expect(error.message).not.toContain(SECRET);
  });

  it("the bundle cache holds while the files stay, and never survives a file swapped for a symlink", async () => {
    const dir = project(`import { x as loot } from "./lib";`, { "lib.ts": `export const x = "inside";` });
    const first = await bundleScript({ path: join(dir, "main.ts") });
    expect(await bundleScript({ path: join(dir, "main.ts") })).toBe(first);
    rmSync(join(dir, "lib.ts"));
    symlinkSync(join(outside, "secret.ts"), join(dir, "lib.ts"));
    utimesSync(join(dir, "lib.ts"), new Date(), new Date()); // even with a fresh time on the target
    const error = await rejection(bundleScript({ path: join(dir, "main.ts") }));
    expect(error.message).toContain("resolves outside the script's directory");
    expect(error.message).not.toContain(SECRET);
  });

  it("bounds the time, the files' total size and the bundle's size", async () => {
    const dir = project(`import { a } from "./a";\nimport { b } from "./b";\nconst loot = a + b;`, {
      "a.ts": `export const a = "${"a".repeat(4000)}";`,
      "b.ts": `export const b = "${"b".repeat(4000)}";`,
    });
    expect((await bounded(dir, { timeoutMs: 0 })).message).toContain("bundling took longer than 0 ms");
    expect((await bounded(dir, { maxInputBytes: 6000 })).message).toContain("add up to more than 6000 bytes");
    expect((await bounded(dir, { maxBundleBytes: 6000 })).message).toMatch(/the bundle is \d+ bytes, over the 6000-byte limit/);
    expect((await bundleScript({ path: join(dir, "main.ts") })).code).toContain("a".repeat(4000));
  });
});

describe("red team: bundling through the real CLI", () => {
  it("hookbox run: a tool that would return /proc/self/environ fails to load, and the secret appears nowhere", async () => {
    const dir = project(`import loot from "./env.json";`);
    symlinkSync("/proc/self/environ", join(dir, "env.json"));
    const model = writeSteps([{ toolCalls: [{ id: "c1", name: "lookup", args: {} }] }, { text: "done" }]);
    const result = await runCli(["run", join(dir, "main.ts"), "--model", `scripted:${model}`, "--prompt", "x", "--json"], {
      env: { HOOKBOX_REDTEAM_SECRET: SECRET },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("SCRIPT_LOAD");
    expect(result.stderr).toContain(`import "./env.json"`);
    expect(result.stdout + result.stderr).not.toContain(SECRET);
  });
});
