import { createHash } from "node:crypto";
import { posix } from "node:path";
import { build, type Loader, type Message, type Plugin } from "esbuild";
import { HookboxError } from "../errors.js";
import type { UploadedFiles } from "./api.js";
import { builtinFilter, LOADERS } from "./bundle-guard.js";
import { finishBundle, sandboxBuildOptions, type Bundle } from "./bundle-output.js";

/*
 * Bundles an uploaded file map (POST /v1/scripts) without touching the disk: every import resolves inside
 * the map or fails naming the import and the file. A relative import climbing out of the map (`../x` from the
 * top), an absolute path, a package name or a Node built-in are refused; nothing is ever read from the host.
 */

const NAMESPACE = "hookbox-upload";
const RESOLVE_SUFFIXES = ["", ".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx", ".json", "/index.ts", "/index.js"];

/** One problem in uploaded files, positioned in the author's file (line and column 1-based). */
export interface FileDiagnostic {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** The error a refused or broken upload raises: SCRIPT_INVALID with `details.diagnostics`. */
export function invalidUpload(label: string, diagnostics: FileDiagnostic[]): HookboxError {
  const first = diagnostics[0];
  const where = first ? `${first.file}:${first.line}:${first.column}: ${first.message}` : "invalid";
  return new HookboxError("SCRIPT_INVALID", `${label}: ${where}${diagnostics.length > 1 ? ` (and ${diagnostics.length - 1} more)` : ""}`, {
    diagnostics,
  });
}

export function loaderFor(file: string): Loader | undefined {
  const ext = posix.extname(file).toLowerCase();
  return Object.hasOwn(LOADERS, ext) ? LOADERS[ext] : undefined;
}

function uploadPlugin(files: Record<string, string>): Plugin {
  const has = (path: string) => Object.hasOwn(files, path);
  return {
    name: "hookbox-upload-confinement",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return { path: args.path, namespace: NAMESPACE };
        const spec = args.path;
        const importer = args.importer;
        const refuse = (why: string) => ({ errors: [{ text: `import "${spec}" in ${importer} is refused: ${why}` }] });
        if (spec === "hookbox") return { path: "hookbox", namespace: "hookbox-runtime" };
        if (builtinFilter.test(spec)) return refuse("Node built-in modules are not available in the sandbox");
        if (spec.startsWith("/") || /^[A-Za-z]:[\\/]/.test(spec) || spec.startsWith("\\") || /^[a-z][a-z0-9+.-]*:/i.test(spec)) {
          return refuse("absolute paths and URLs are not allowed; import the uploaded files by relative path");
        }
        if (!spec.startsWith("./") && !spec.startsWith("../")) {
          return refuse("packages are not available to uploaded scripts; upload the code you need as files");
        }
        const joined = posix.normalize(posix.join(posix.dirname(importer), spec));
        if (joined.startsWith("../") || joined === "..") return refuse("it points outside the uploaded files");
        const found = RESOLVE_SUFFIXES.map((suffix) => joined + suffix).find(has);
        if (found === undefined) return refuse(`no uploaded file matches it (looked for ${joined} with .ts, .js, /index.ts, ...)`);
        return { path: found, namespace: NAMESPACE };
      });
      b.onLoad({ filter: /.*/, namespace: "hookbox-runtime" }, () => ({ contents: "module.exports = __hookbox_runtime__;", loader: "js" }));
      b.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const loader = loaderFor(args.path);
        if (!has(args.path) || loader === undefined) return { errors: [{ text: `${args.path} is not an uploaded script file` }] };
        return { contents: files[args.path], loader };
      });
    },
  };
}

function toDiagnostics(messages: Message[], entry: string): FileDiagnostic[] {
  return messages.map((message) => ({
    file: message.location?.file.replace(`${NAMESPACE}:`, "") ?? entry,
    line: message.location?.line ?? 1,
    column: (message.location?.column ?? 0) + 1,
    message: message.text,
  }));
}

/** Recently built uploads by content (versions are immutable, so the same files always give the same bundle). */
const cache = new Map<string, Bundle>();
const CACHE_ENTRIES = 256;

/** Bundles `upload.entry` from `upload.files` only. Rejects with SCRIPT_INVALID carrying file:line:column diagnostics. */
export async function bundleUploadedFiles(upload: UploadedFiles): Promise<Bundle> {
  const digest = createHash("sha256")
    .update(JSON.stringify([upload.entry, Object.entries(upload.files).sort()]))
    .digest("hex");
  const hit = cache.get(digest);
  if (hit !== undefined) return hit;
  if (!Object.hasOwn(upload.files, upload.entry)) {
    throw invalidUpload(upload.label, [
      { file: upload.entry, line: 1, column: 1, message: `the entry ${upload.entry} is not among the files` },
    ]);
  }
  let result;
  try {
    result = await build({
      ...sandboxBuildOptions,
      entryPoints: [upload.entry],
      // A directory that holds nothing: resolution never reaches the disk (the plugin answers every import).
      absWorkingDir: "/",
      outfile: "/__hookbox_upload_bundle.js",
      plugins: [uploadPlugin(upload.files)],
    });
  } catch (error) {
    const failure = error as { errors?: Message[]; message?: string };
    const diagnostics = failure.errors?.length
      ? toDiagnostics(failure.errors, upload.entry)
      : [{ file: upload.entry, line: 1, column: 1, message: String(failure.message ?? error) }];
    throw invalidUpload(upload.label, diagnostics);
  }
  const js = result.outputFiles.find((file) => file.path.endsWith(".js"));
  const map = result.outputFiles.find((file) => file.path.endsWith(".map"));
  if (js === undefined || map === undefined) throw new HookboxError("SCRIPT_LOAD", `${upload.label}: bundling produced no output`);
  // Stack traces name the uploaded files as uploaded (the source map says `hookbox-upload:lib/util.ts`).
  const sourceMap = JSON.parse(map.text) as { sources: string[] };
  sourceMap.sources = sourceMap.sources.map((source) => source.replace(`${NAMESPACE}:`, ""));
  const bundle = finishBundle({
    js: js.text,
    map: JSON.stringify(sourceMap),
    defaultName: posix.basename(upload.entry).replace(/\.[mc]?[jt]sx?$/, ""),
    displayPath: upload.label,
  });
  cache.set(digest, bundle);
  if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  return bundle;
}
