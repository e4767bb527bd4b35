import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where dist/sandbox-worker.js is. */
export function defaultWorkerPath(): string {
  return distFile("sandbox-worker.js");
}

/**
 * Where a built file is: beside this module when running from dist/, or under the package root's dist/
 * when running from source (tests import src/ directly).
 */
export function distFile(name: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  const beside = join(dir, name);
  if (existsSync(beside)) return beside;
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "dist", name);
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`dist/${name} not found: run \`npm run build\` first`);
}
