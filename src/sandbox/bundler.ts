import { createHash } from "node:crypto";
import { lstatSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, extname, join, relative, resolve } from "node:path";
import { context, type BuildOptions, type BuildResult, type Message } from "esbuild";
import { BundleGuard, DEFAULT_BUNDLE_BOUNDS, GUARD_NAME, isKernelPath, type BundleBounds, type InputIdentity } from "./bundle-guard.js";
import { finishBundle, sandboxBuildOptions, type Bundle } from "./bundle-output.js";
import { bundleUploadedFiles } from "./files-bundler.js";
import type { ScriptCache } from "./script-cache.js";
import { HookboxError } from "../errors.js";
import type { BundleVariant, ScriptSource } from "./api.js";

function identity(path: string): InputIdentity {
  const stat = lstatSync(path);
  return { path, dev: stat.dev, ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size };
}

interface CacheEntry {
  bundle: Bundle;
  /** Each input's real path and identity: a file replaced (or swapped for a symlink) is never a cache hit. */
  inputs: InputIdentity[];
}

const cache = new Map<string, CacheEntry>();

/** The disk cache a restart reuses bundles from (script-cache.ts); a server sets it, the library runs without. */
let diskCache: ScriptCache | undefined;
/** How each script's bundle was obtained in this process (GET /metrics). */
const obtained = { esbuild: 0, memory: 0, disk: 0 };

export function useScriptCache(cache: ScriptCache | undefined): void {
  diskCache = cache;
}

export function bundlesObtained(): Readonly<typeof obtained> {
  return obtained;
}

/**
 * esbuild's own messages can quote the files they are about (a parse error shows the offending text), so
 * only the guard's messages (built from names) keep their text; others become `file:line:col` and a category.
 */
function formatMessages(messages: Message[], guard: BundleGuard): string {
  return messages
    .slice(0, 5)
    .map((message) => {
      const text =
        message.pluginName === GUARD_NAME ? message.text : "esbuild cannot bundle this (a syntax error or an unsupported construct)";
      const at = message.location;
      return at ? `${guard.shown(at.file)}:${at.line}:${at.column + 1}: ${text}` : text;
    })
    .join("; ");
}

/** esbuild's own failure text may quote a file: only our time bound and cancellations are shown as they are. */
function describeFailure(failure: { message?: string }): string {
  const message = String(failure.message ?? "");
  return /^bundling took longer than \d+ ms$/.test(message) ? message : "esbuild stopped";
}

function scriptName(file: string): string {
  return basename(file).replace(/\.(d\.)?[mc]?[jt]sx?$/, "") || basename(file);
}

/** The identities of files a cached bundle was built from, or undefined when one cannot be read now. */
function identities(paths: string[]): InputIdentity[] | undefined {
  try {
    return paths.map(identity);
  } catch {
    return undefined;
  }
}

function inputsUnchanged(entry: CacheEntry): boolean {
  for (const input of entry.inputs) {
    try {
      const now = identity(input.path);
      if (now.dev !== input.dev || now.ino !== input.ino || now.mtimeMs !== input.mtimeMs || now.size !== input.size) return false;
    } catch {
      return false;
    }
  }
  return true;
}

function directoryExists(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The directory a script may import from: the entry file's own directory, symlinks resolved. */
function scriptRoot(entry: string, display: string): string {
  let root: string;
  try {
    root = realpathSync(dirname(entry));
  } catch {
    throw new HookboxError("SCRIPT_LOAD", `${display}: the script's directory cannot be read`, { file: display });
  }
  if (isKernelPath(root) || dirname(root) === root) {
    throw new HookboxError("SCRIPT_LOAD", `${display}: scripts cannot be bundled from the file system's root or a kernel directory`, {
      file: display,
    });
  }
  return root;
}

/** Runs esbuild, cancelled when it outlives the time bound. */
async function runEsbuild(options: BuildOptions, timeoutMs: number): Promise<BuildResult<{ write: false; metafile: true }>> {
  const ctx = await context(options);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void ctx.cancel();
  }, timeoutMs);
  try {
    return (await ctx.rebuild()) as BuildResult<{ write: false; metafile: true }>;
  } catch (error) {
    if (timedOut) throw new Error(`bundling took longer than ${timeoutMs} ms`);
    throw error;
  } finally {
    clearTimeout(timer);
    await ctx.dispose();
  }
}

/**
 * Bundles a script with esbuild: TS/JS, relative imports and pure-JS packages from a node_modules inside the
 * script's directory; "hookbox" maps to the sandbox runtime. Every file is resolved and read through the
 * guard (bundle-guard.ts), which confines the bundle to the script's directory. Cached by source (path, or
 * content hash for source text) and revalidated against the input files.
 */
export async function bundleScript(
  source: ScriptSource,
  bounds: BundleBounds = DEFAULT_BUNDLE_BOUNDS,
  variant?: BundleVariant,
): Promise<Bundle> {
  if ("files" in source) return bundleUploadedFiles(source);
  const isPath = "path" in source;
  const entry = resolve(isPath ? source.path : source.filename);
  const plain = isPath ? `path:${entry}` : `source:${createHash("sha256").update(entry).update("\0").update(source.source).digest("hex")}`;
  const key = variant ? `${plain}\0variant:${variant.key}` : plain;
  const hit = cache.get(key);
  if (hit !== undefined && inputsUnchanged(hit)) {
    obtained.memory += 1;
    return hit.bundle;
  }

  const displayPath = relative(process.cwd(), entry) || entry;
  // Source text whose directory is gone (a session's recorded script, resumed on another machine or after its folder
  // moved) is bundled on its own, as an upload of one file: it may import "hookbox" and nothing else.
  if (!isPath && !variant && !directoryExists(dirname(entry))) {
    const name = basename(entry);
    return bundleUploadedFiles({ files: { [name]: source.source }, entry: name, label: displayPath });
  }
  // A variant (coverage counters, a fixed clock) is a test's own build: it never reaches the disk.
  const kept = variant ? undefined : diskCache?.bundle(source, bounds, displayPath);
  if (kept) {
    const inputs = identities(kept.inputs);
    if (inputs) {
      cache.set(key, { bundle: kept.bundle, inputs });
      obtained.disk += 1;
      return kept.bundle;
    }
  }
  const fail = (detail: string) => new HookboxError("SCRIPT_LOAD", `${displayPath}: ${detail}`, { file: displayPath });
  const root = scriptRoot(entry, displayPath);
  if (!isPath && Buffer.byteLength(source.source) > bounds.maxFileBytes) {
    throw fail(`the source is over the ${bounds.maxFileBytes}-byte limit per file`);
  }
  const guard = new BundleGuard({
    root,
    entry: isPath ? entry : undefined,
    bounds,
    ...(variant?.source ? { rewrite: variant.source } : {}),
  });
  const ext = extname(entry).toLowerCase();
  let result;
  try {
    result = await runEsbuild(
      {
        ...(isPath
          ? { entryPoints: [entry] }
          : {
              stdin: {
                contents: variant?.source ? variant.source({ path: entry, text: source.source }) : source.source,
                sourcefile: basename(entry),
                resolveDir: root,
                loader: ext === ".js" || ext === ".mjs" || ext === ".cjs" ? "js" : "ts",
              },
            }),
        absWorkingDir: root,
        outfile: join(root, "__hookbox_bundle.js"),
        ...sandboxBuildOptions,
        mainFields: ["module", "main"],
        plugins: [guard.plugin()],
      },
      bounds.timeoutMs,
    );
  } catch (error) {
    const failure = error as { errors?: Message[]; message?: string };
    throw fail(failure.errors?.length ? formatMessages(failure.errors, guard) : `bundling failed (${describeFailure(failure)})`);
  }
  const js = result.outputFiles.find((file) => file.path.endsWith(".js"));
  const mapFile = result.outputFiles.find((file) => file.path.endsWith(".map"));
  if (js === undefined || mapFile === undefined) throw fail("bundling produced no output");
  if (js.contents.byteLength > bounds.maxBundleBytes) {
    throw fail(`the bundle is ${js.contents.byteLength} bytes, over the ${bounds.maxBundleBytes}-byte limit`);
  }
  const output = variant?.bundle ? variant.bundle(js.text) : js.text;
  if (output.split("\n").length !== js.text.split("\n").length) throw fail(`the bundle variant "${variant?.key}" moved its lines`);
  const bundle = finishBundle({ js: output, map: mapFile.text, defaultName: scriptName(entry), displayPath });
  // The files as the guard read them (source text itself is part of the cache key, not a file).
  cache.set(key, { bundle, inputs: guard.inputs });
  obtained.esbuild += 1;
  if (!variant) diskCache?.store(source, bounds, { bundle, map: mapFile.text, inputs: guard.inputs.map((input) => input.path) });
  return bundle;
}
