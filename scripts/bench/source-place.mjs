// Where a position in one of serve's script files lies, for the profiling scripts: a hookbox source file and line
// (through dist's source maps, each read once), a package under node_modules, or a file outside dist.
import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { SourceMap } from "node:module";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const maps = new Map();

/**
 * `path` (a file), `line` and `column` (0-based): `{ file, line, hookbox }`, where `file` is the package's name (hookbox
 * false) or a path from the repository's root, and `line` the source's line (1-based) when dist's map knows it.
 */
export function placeOf(path, line, column) {
  const nodeModules = path.lastIndexOf("node_modules/");
  if (nodeModules >= 0) {
    const parts = path.slice(nodeModules + 13).split("/");
    return { file: parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0], hookbox: false };
  }
  if (!path.startsWith(join(root, "dist"))) return { file: relative(root, path), hookbox: true };
  if (!maps.has(path)) {
    try {
      maps.set(path, new SourceMap(JSON.parse(readFileSync(`${path}.map`, "utf8"))));
    } catch {
      maps.set(path, undefined);
    }
  }
  const entry = maps.get(path)?.findEntry(line, column);
  if (!entry?.originalSource) return { file: relative(root, path), hookbox: true };
  return {
    file: relative(root, fileURLToPath(new URL(entry.originalSource, `file://${path}`))),
    line: entry.originalLine + 1,
    hookbox: true,
  };
}
