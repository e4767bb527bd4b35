import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where dist/sandbox-worker.js is: beside this module when running from dist/, or under the package root
 * when running from source (tests import src/ directly).
 */
export function defaultWorkerPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  const beside = join(dir, "sandbox-worker.js");
  if (existsSync(beside)) return beside;
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "dist", "sandbox-worker.js");
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error("dist/sandbox-worker.js not found: run `npm run build` first");
}
