import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import { builtinModules } from "node:module";
import { basename, dirname, extname, join, relative, resolve } from "node:path";
import { build, type BuildOptions, type Message, type Plugin } from "esbuild";
import { HookboxError } from "../errors.js";
import type { ScriptSource } from "./api.js";
import { SourceMap, type RawSourceMap } from "./source-map.js";
import { bundleUploadedFiles } from "./files-bundler.js";

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

interface CacheEntry {
  bundle: Bundle;
  inputs: { path: string; mtimeMs: number; size: number }[];
}

const cache = new Map<string, CacheEntry>();
const byFilename = new Map<string, Bundle>();

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
/** Node built-in module specifiers (`fs`, `node:fs`, `fs/promises`, ...): refused in the sandbox. */
export const builtinFilter = new RegExp(
  `^(node:.*|(${builtinModules
    .filter((name) => !name.startsWith("_"))
    .map(escapeRegExp)
    .join("|")})(/.*)?)$`,
);

function guardPlugin(root: string): Plugin {
  const shown = (file: string) => (file ? relative(root, file) || file : "the script");
  return {
    name: "hookbox-sandbox-guard",
    setup(b) {
      b.onResolve({ filter: /^hookbox$/ }, () => ({ path: "hookbox", namespace: "hookbox-runtime" }));
      b.onLoad({ filter: /.*/, namespace: "hookbox-runtime" }, () => ({ contents: "module.exports = __hookbox_runtime__;", loader: "js" }));
      b.onResolve({ filter: builtinFilter }, (args) => ({
        errors: [
          { text: `import "${args.path}" in ${shown(args.importer)} is refused: Node built-in modules are not available in the sandbox` },
        ],
      }));
      b.onResolve({ filter: /\.node$/ }, (args) => ({
        errors: [{ text: `import "${args.path}" in ${shown(args.importer)} is refused: native modules cannot run in the sandbox` }],
      }));
    },
  };
}

/** esbuild options every sandbox bundle is built with: one iife the runtime wraps, with an external source map. */
export const sandboxBuildOptions = {
  bundle: true,
  write: false,
  format: "iife",
  globalName: "__hookboxScript",
  platform: "neutral",
  target: "es2022",
  sourcemap: "external",
  metafile: true,
  logLevel: "silent",
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
} as const satisfies BuildOptions;

function formatMessages(messages: Message[]): string {
  return messages
    .slice(0, 5)
    .map((message) =>
      message.location ? `${message.location.file}:${message.location.line}:${message.location.column + 1}: ${message.text}` : message.text,
    )
    .join("; ");
}

function scriptName(file: string): string {
  return basename(file).replace(/\.(d\.)?[mc]?[jt]sx?$/, "") || basename(file);
}

function inputsUnchanged(entry: CacheEntry): boolean {
  for (const input of entry.inputs) {
    try {
      const stat = statSync(input.path);
      if (stat.mtimeMs !== input.mtimeMs || stat.size !== input.size) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Bundles a script with esbuild: TS/JS, relative imports and pure-JS packages; "hookbox" maps to the
 * sandbox runtime; Node built-ins and native modules are refused naming the import and the file.
 * Cached by source (path, or content hash for source text) and revalidated against the input files.
 */
export async function bundleScript(source: ScriptSource): Promise<Bundle> {
  if ("files" in source) return bundleUploadedFiles(source);
  const isPath = "path" in source;
  const entry = resolve(isPath ? source.path : source.filename);
  const key = isPath ? `path:${entry}` : `source:${createHash("sha256").update(entry).update("\0").update(source.source).digest("hex")}`;
  const hit = cache.get(key);
  if (hit !== undefined && inputsUnchanged(hit)) return hit.bundle;

  const root = dirname(entry);
  const ext = extname(entry).toLowerCase();
  let result;
  try {
    result = await build({
      ...(isPath
        ? { entryPoints: [entry] }
        : {
            stdin: {
              contents: source.source,
              sourcefile: basename(entry),
              resolveDir: root,
              loader: ext === ".js" || ext === ".mjs" || ext === ".cjs" ? "js" : "ts",
            },
          }),
      absWorkingDir: root,
      outfile: join(root, "__hookbox_bundle.js"),
      ...sandboxBuildOptions,
      mainFields: ["module", "main"],
      plugins: [guardPlugin(root)],
    });
  } catch (error) {
    const failure = error as { errors?: Message[]; message?: string };
    const detail = failure.errors?.length ? formatMessages(failure.errors) : String(failure.message ?? error);
    throw new HookboxError("SCRIPT_LOAD", `${relative(process.cwd(), entry) || entry}: ${detail}`, { file: entry });
  }
  const js = result.outputFiles.find((file) => file.path.endsWith(".js"));
  const mapFile = result.outputFiles.find((file) => file.path.endsWith(".map"));
  if (js === undefined || mapFile === undefined) throw new HookboxError("SCRIPT_LOAD", `${entry}: bundling produced no output`);
  const bundle = finishBundle({
    js: js.text,
    map: mapFile.text,
    defaultName: scriptName(entry),
    displayPath: relative(process.cwd(), entry) || entry,
  });
  // Files the bundle was built from (source text itself is part of the cache key, not a file).
  const inputs = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes(":") && (isPath || resolve(root, input) !== entry))
    .map((input) => {
      const path = resolve(root, input);
      const stat = statSync(path);
      return { path, mtimeMs: stat.mtimeMs, size: stat.size };
    });
  cache.set(key, { bundle, inputs });
  return bundle;
}

/** Wraps esbuild's iife output as the sandbox's factory and registers its source map (shared by every way of bundling). */
export function finishBundle(output: { js: string; map: string; defaultName: string; displayPath: string }): Bundle {
  // The prefix stays on line 1 so bundle line numbers match the source map.
  const code = `(function (__hookbox_runtime__) {${output.js}\nreturn __hookboxScript;\n})`;
  const hash = createHash("sha256").update(code).digest("hex");
  const bundle: Bundle = {
    hash,
    filename: `bundle-${hash.slice(0, 12)}.js`,
    code,
    defaultName: output.defaultName,
    displayPath: output.displayPath,
    map: new SourceMap(JSON.parse(output.map) as RawSourceMap),
  };
  byFilename.set(bundle.filename, bundle);
  return bundle;
}

/** The source map of a bundle by the file name its isolate knows it as. */
export function sourceMapFor(filename: string): SourceMap | undefined {
  return byFilename.get(filename)?.map;
}
