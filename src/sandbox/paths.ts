import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function defaultWorkerPath(): string {
  return builtFile("sandbox-worker.js");
}

/**
 * Where a built entry (dist/<file>) is: beside this module when running from dist/, or under the package
 * root when running from source (tests import src/ directly).
 */
export function builtFile(file: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  const beside = join(dir, file);
  if (existsSync(beside)) return beside;
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "dist", file);
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`dist/${file} not found: run \`npm run build\` first`);
}
