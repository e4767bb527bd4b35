import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The hookbox package root: the nearest ancestor of this module holding a package.json named "hookbox".
 * Works the same from the bundled dist/cli.js and from the sources under vitest.
 */
export function packageRoot(from: string = import.meta.url): string {
  let dir = dirname(from.startsWith("file:") ? fileURLToPath(from) : from);
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name === "hookbox") return dir;
      } catch {
        // An unreadable package.json on the way up is not ours; keep walking.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the hookbox package root above ${from}`);
    dir = parent;
  }
}

/** The version in the hookbox package's package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
}
