// Builds what must exist as plain JS at run time: the CLI/library bundle the `hookbox` bin loads, the
// sandbox worker process entry, and the in-isolate runtime (evaluated inside every fresh context).
import { build } from "esbuild";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
mkdirSync(join(root, "dist"), { recursive: true });

const nodeCommon = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
};

await Promise.all([
  build({ ...nodeCommon, entryPoints: [join(root, "src/cli/main.ts")], outfile: join(root, "dist/cli.js") }),
  build({ ...nodeCommon, entryPoints: [join(root, "src/index.ts")], outfile: join(root, "dist/index.js") }),
  build({ ...nodeCommon, entryPoints: [join(root, "src/sandbox/worker/main.ts")], outfile: join(root, "dist/sandbox-worker.js") }),
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
