import { createHash } from "node:crypto";
import type { BuildOptions } from "esbuild";
import { SourceMap, type RawSourceMap } from "./source-map.js";

/*
 * What every way of bundling a script shares: the esbuild options, and turning esbuild's output into the
 * sandbox's Bundle with its source map registered (bundler.ts bundles files on disk, files-bundler.ts an
 * uploaded file map).
 */

/** A script bundled for the sandbox: one iife, wrapped as a factory that receives the "hookbox" module. */
export interface Bundle {
  hash: string;
  /** Name the isolate compiles it under (appears in guest stacks; carries no host path). */
  filename: string;
  code: string;
  /** Script name when defineScript gives none: the file name without extension. */
  defaultName: string;
  /** Where the author's files are, for messages. */
  displayPath: string;
  map: SourceMap;
}

/** esbuild options every sandbox bundle is built with (from files on disk or an uploaded file map). */
export const sandboxBuildOptions = {
  bundle: true,
  write: false,
  format: "iife",
  globalName: "__hookboxScript",
  platform: "neutral",
  target: "es2022",
  sourcemap: "external",
  sourcesContent: false,
  metafile: true,
  logLevel: "silent",
  legalComments: "none",
  // Fixed here: a tsconfig.json shipped beside the script (paths, baseUrl) must not steer resolution.
  tsconfigRaw: {},
  define: { "process.env.NODE_ENV": '"production"' },
} as const satisfies BuildOptions;

const byFilename = new Map<string, Bundle>();

/** Wraps esbuild's iife output as the sandbox's factory and registers its source map (shared by every way of bundling). */
export function finishBundle(output: { js: string; map: string; defaultName: string; displayPath: string }): Bundle {
  // The prefix stays on line 1 so bundle line numbers match the source map.
  const code = `(function (__hookbox_runtime__) {${output.js}\nreturn __hookboxScript;\n})`;
  return restoreBundle({ code, map: output.map, defaultName: output.defaultName, displayPath: output.displayPath });
}

/** A bundle from its wrapped code and source map text (finishBundle's, or one kept on disk: script-cache.ts), its map registered. */
export function restoreBundle(stored: { code: string; map: string; defaultName: string; displayPath: string }): Bundle {
  const hash = createHash("sha256").update(stored.code).digest("hex");
  const bundle: Bundle = {
    hash,
    filename: `bundle-${hash.slice(0, 12)}.js`,
    code: stored.code,
    defaultName: stored.defaultName,
    displayPath: stored.displayPath,
    map: new SourceMap(JSON.parse(stored.map) as RawSourceMap),
  };
  byFilename.set(bundle.filename, bundle);
  return bundle;
}

/** The source map of a bundle by the file name its isolate knows it as. */
export function sourceMapFor(filename: string): SourceMap | undefined {
  return byFilename.get(filename)?.map;
}
