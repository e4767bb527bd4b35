// Builds what must exist as plain JS at run time: the CLI/library bundle the `hookbox` bin loads, the
// sandbox worker process entry, and the in-isolate runtime (evaluated inside every fresh context); and the
// library's declarations: tsc writes one file per module to dist/types/ (from src/index.ts), rolled up into the one
// published file, dist/index.d.ts, which `exports` points editors and tsc at (scripts/declarations.mjs).
import { build } from "esbuild";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { rollUpDeclarations } from "./declarations.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Chunk names carry content hashes: drop the previous build's so they do not pile up.
rmSync(join(root, "dist/chunks"), { recursive: true, force: true });
mkdirSync(join(root, "dist"), { recursive: true });

const nodeCommon = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
};

// bin/node-support.js refuses an old Node. It stays its own module, imported from dist/ where it ships (bin/), and
// its import is moved to the top of the entry, so it is evaluated before every chunk the library imports (ESM
// evaluates imports in order; esbuild writes external imports after its chunks).
const NODE_SUPPORT_IMPORT = 'import "../bin/node-support.js";';
const nodeSupportFirst = {
  name: "node-support-first",
  setup(build) {
    build.onResolve({ filter: /\/bin\/node-support\.js$/ }, () => ({ path: "../bin/node-support.js", external: true }));
    build.onEnd(async (result) => {
      if (result.errors.length) return;
      for (const entry of ["index.js", "cli.js", "testing.js"]) {
        const file = join(root, "dist", entry);
        const code = await readFile(file, "utf8");
        if (!code.includes(NODE_SUPPORT_IMPORT)) continue;
        // Same line count, so the source map still holds: the import leaves an empty line and joins line 1.
        await writeFile(file, `${NODE_SUPPORT_IMPORT}${code.replace(NODE_SUPPORT_IMPORT, "")}`);
      }
    });
  },
};

// tsc emits declarations only (esbuild does the JS); incremental, so an unchanged tree costs well under a second.
const moduleDeclarations = promisify(execFile)(
  process.execPath,
  [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")],
  {
    cwd: root,
  },
).catch((error) => {
  process.stderr.write(`${error.stdout ?? ""}${error.stderr ?? ""}`);
  throw new Error("declaration build failed");
});

// Code splitting keeps each command's heavy dependencies (the TypeScript compiler, the AI SDK, SQLite)
// out of the start-up path of the others: `hookbox check` does not load the sandbox, and vice versa.
const library = build({
  ...nodeCommon,
  entryPoints: { cli: join(root, "src/cli/main.ts"), index: join(root, "src/index.ts"), testing: join(root, "src/testing/index.ts") },
  outdir: join(root, "dist"),
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  plugins: [nodeSupportFirst],
  // Which names dist/index.js exports as values: the rollup keeps every other name a type-only export.
  metafile: true,
});

await Promise.all([
  Promise.all([moduleDeclarations, library]).then(([, result]) =>
    rollUpDeclarations(root, { valueExports: result.metafile.outputs["dist/index.js"].exports }),
  ),
  build({ ...nodeCommon, entryPoints: [join(root, "src/sandbox/worker/main.ts")], outfile: join(root, "dist/sandbox-worker.js") }),
  // Started through the same launcher as the workers, it reports what code inside can do (hookbox doctor).
  build({ ...nodeCommon, entryPoints: [join(root, "src/sandbox/wall/probe-inside.ts")], outfile: join(root, "dist/wall-probe.js") }),
  // Uploaded scripts are type-checked in a worker thread with its own heap limit and a deadline.
  build({ ...nodeCommon, entryPoints: [join(root, "src/check/check-worker.ts")], outfile: join(root, "dist/check-worker.js") }),
  // The web inspector (ui/): one script, one stylesheet and its page, served by `hookbox serve` at /ui/.
  build({
    entryPoints: { app: join(root, "ui/src/main.tsx") },
    outdir: join(root, "dist/ui"),
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: "linked",
    jsx: "automatic",
    jsxImportSource: "preact",
    tsconfig: join(root, "ui/tsconfig.json"),
    logLevel: "warning",
  }).then(() => copyFileSync(join(root, "ui/index.html"), join(root, "dist/ui/index.html"))),
  build({
    entryPoints: [join(root, "runtime/bootstrap.ts")],
    outfile: join(root, "dist/runtime.js"),
    bundle: true,
    platform: "neutral",
    format: "iife",
    globalName: "__hookboxBootstrap",
    target: "es2022",
    logLevel: "warning",
  }),
]);
