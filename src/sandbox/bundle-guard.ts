import { constants as fsConstants } from "node:fs";
import { open, readlink, realpath, stat } from "node:fs/promises";
import { builtinModules } from "node:module";
import { dirname, extname, isAbsolute, relative, sep } from "node:path";
import type { Loader, OnLoadResult, OnResolveArgs, OnResolveResult, Plugin, PluginBuild } from "esbuild";

/**
 * Bounds of one bundling. Input sizes are checked on the file's metadata before it is read; the total
 * covers every file read for the bundle, and the time bound cancels esbuild.
 */
export interface BundleBounds {
  maxFileBytes: number;
  maxInputBytes: number;
  maxBundleBytes: number;
  timeoutMs: number;
}

export const DEFAULT_BUNDLE_BOUNDS: BundleBounds = {
  maxFileBytes: 2 * 1024 * 1024,
  maxInputBytes: 8 * 1024 * 1024,
  maxBundleBytes: 8 * 1024 * 1024,
  timeoutMs: 10_000,
};

/** A file as it was read for a bundle: the cache is valid while every input still has this identity. */
export interface InputIdentity {
  path: string;
  dev: number;
  ino: number;
  mtimeMs: number;
  size: number;
}

/**
 * The only files a script may import, and how each is compiled: code, and JSON data inside the root. The one
 * table for both ways of bundling (files on disk here, uploaded file maps in files-bundler.ts).
 */
export const LOADERS: Readonly<Record<string, Loader>> = {
  ".ts": "ts",
  ".mts": "ts",
  ".cts": "ts",
  ".tsx": "tsx",
  ".js": "js",
  ".mjs": "js",
  ".cjs": "js",
  ".jsx": "jsx",
  ".json": "json",
};
export const IMPORTABLE_EXTENSIONS = Object.keys(LOADERS);

/** Kernel file systems are refused by name too, whatever the root is. */
const KERNEL_DIRS = ["/proc", "/dev", "/sys"];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
export const builtinFilter = new RegExp(
  `^(node:.*|(${builtinModules
    .filter((name) => !name.startsWith("_"))
    .map(escapeRegExp)
    .join("|")})(/.*)?)$`,
);
/** `data:`, `file:`, `http:`... (a Windows drive letter is caught as absolute first). */
const URL_LIKE = /^[a-z][a-z0-9+.-]*:/i;
/** Marks the guard's own call into esbuild's resolver, so the guard lets that one through. */
const INNER_RESOLVE = Symbol("hookbox-inner-resolve");

export const GUARD_NAME = "hookbox-sandbox-guard";

export function isKernelPath(path: string): boolean {
  return KERNEL_DIRS.some((dir) => path === dir || path.startsWith(dir + "/"));
}

/** `path` is `root` or below it, and not in a kernel file system. */
export function isInside(root: string, path: string): boolean {
  const prefix = root.endsWith(sep) ? root : root + sep;
  return (path === root || path.startsWith(prefix)) && !isKernelPath(path);
}

/** Refusal raised inside the guard; its text is built only from names (imports, files), never content. */
class Refusal extends Error {}

/**
 * The bundler's only way to the file system. Every import is resolved by esbuild's resolver (node_modules,
 * package exports, extensions) with no tsconfig, then confined here: the file's real path (symlinks resolved)
 * must be a regular file inside `root` with a code or JSON extension; then the guard reads it itself (never
 * esbuild), re-checking the opened file's type, size and real path, so a file swapped after the check is caught.
 */
export class BundleGuard {
  private inputBytes = 0;
  /** Every file read, with its identity at the time of the read. */
  readonly inputs: InputIdentity[] = [];
  private readonly deadline: number;

  constructor(
    private readonly options: {
      root: string;
      entry: string | undefined;
      bounds: BundleBounds;
      /** Rewrites each file read outside node_modules (a bundle variant's: `BundleVariant.source`). */
      rewrite?: (file: { path: string; text: string }) => string;
    },
  ) {
    this.deadline = Date.now() + options.bounds.timeoutMs;
  }

  /** A path for messages: relative to the script's directory, never a host path outside it. */
  shown(file: string): string {
    if (file === "" || file === "<stdin>") return this.options.entry === undefined ? "the script" : this.shown(this.options.entry);
    if (!isAbsolute(file)) return file;
    return isInside(this.options.root, file) ? relative(this.options.root, file) || file : "a file outside the script's directory";
  }

  plugin(): Plugin {
    return {
      name: GUARD_NAME,
      setup: (build) => {
        build.onResolve({ filter: /.*/ }, (args) => this.resolve(build, args));
        build.onLoad({ filter: /.*/, namespace: "hookbox-runtime" }, () => ({
          contents: "module.exports = __hookbox_runtime__;",
          loader: "js",
        }));
        build.onLoad({ filter: /.*/, namespace: "file" }, (args) => this.load(args.path));
      },
    };
  }

  private async resolve(build: PluginBuild, args: OnResolveArgs): Promise<OnResolveResult | undefined> {
    if (args.pluginData === INNER_RESOLVE) return undefined;
    try {
      return await this.confineImport(build, args);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      return { errors: [{ text: error.message }] };
    }
  }

  private async confineImport(build: PluginBuild, args: OnResolveArgs): Promise<OnResolveResult> {
    if (args.kind === "entry-point") return { path: await this.confine(args.path, "the entry file"), namespace: "file" };
    const spec = args.path;
    const where = `import "${spec}" in ${this.shown(args.importer)}`;
    if (spec === "hookbox") return { path: "hookbox", namespace: "hookbox-runtime" };
    if (builtinFilter.test(spec)) throw new Refusal(`${where} is refused: Node built-in modules are not available in the sandbox`);
    if (spec.endsWith(".node")) throw new Refusal(`${where} is refused: native modules cannot run in the sandbox`);
    if (Object.keys(args.with).length > 0) {
      throw new Refusal(`${where} is refused: import attributes (with { ... }) are not supported; import code or JSON plainly`);
    }
    if (isAbsolute(spec) || URL_LIKE.test(spec)) {
      throw new Refusal(`${where} is refused: absolute paths and URLs are not allowed; import files inside the script's directory`);
    }
    this.checkTime();
    const found = await build.resolve(spec, {
      kind: args.kind,
      importer: args.importer,
      resolveDir: args.resolveDir,
      pluginData: INNER_RESOLVE,
    });
    if (found.errors.length > 0 || found.path === "" || found.namespace !== "file") {
      throw new Refusal(`${where} cannot be resolved inside the script's directory`);
    }
    const path = await this.confine(found.path, where);
    return { path, namespace: "file", ...(found.sideEffects === false ? { sideEffects: false } : {}) };
  }

  /** The real path of an import, refused unless it is an importable regular file inside the root. */
  private async confine(path: string, where: string): Promise<string> {
    let real: string;
    try {
      real = await realpath(path);
    } catch {
      throw new Refusal(`${where} cannot be read`);
    }
    if (!isInside(this.options.root, real)) throw new Refusal(`${where} is refused: it resolves outside the script's directory`);
    const info = await stat(real).catch(() => undefined);
    if (info === undefined || !info.isFile()) throw new Refusal(`${where} is refused: it is not a regular file`);
    this.loaderFor(real, where);
    if (info.size > this.options.bounds.maxFileBytes) throw this.tooBig(where, info.size);
    return real;
  }

  private loaderFor(path: string, where: string): Loader {
    const loader = LOADERS[extname(path).toLowerCase()];
    if (loader === undefined) {
      throw new Refusal(`${where} is refused: only code and JSON files (${IMPORTABLE_EXTENSIONS.join(" ")}) can be imported`);
    }
    return loader;
  }

  private tooBig(where: string, size: number): Refusal {
    return new Refusal(`${where} is refused: ${size} bytes is over the ${this.options.bounds.maxFileBytes}-byte limit per file`);
  }

  private checkTime(): void {
    if (Date.now() > this.deadline) throw new Refusal(`bundling took longer than ${this.options.bounds.timeoutMs} ms`);
  }

  /** Reads a confined file; O_NONBLOCK so a FIFO swapped in after the check cannot block the open. */
  private async load(path: string): Promise<OnLoadResult> {
    const where = this.shown(path);
    try {
      this.checkTime();
      const loader = this.loaderFor(path, where);
      const handle = await open(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW).catch(() => {
        throw new Refusal(`${where} cannot be read`);
      });
      try {
        const info = await handle.stat();
        if (!info.isFile()) throw new Refusal(`${where} is refused: it is not a regular file`);
        if (info.size > this.options.bounds.maxFileBytes) throw this.tooBig(where, info.size);
        const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => path);
        if (!isInside(this.options.root, opened)) throw new Refusal(`${where} is refused: it resolves outside the script's directory`);
        this.inputs.push({ path, dev: info.dev, ino: info.ino, mtimeMs: info.mtimeMs, size: info.size });
        const buffer = Buffer.alloc(info.size);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
        this.inputBytes += bytesRead;
        if (this.inputBytes > this.options.bounds.maxInputBytes) {
          throw new Refusal(`the script's files add up to more than ${this.options.bounds.maxInputBytes} bytes`);
        }
        const contents = buffer.subarray(0, bytesRead);
        const rewrite = this.options.rewrite;
        if (rewrite !== undefined && loader !== "json" && !path.split(sep).includes("node_modules")) {
          const text = contents.toString("utf8");
          const rewritten = rewrite({ path, text });
          if (rewritten.split("\n").length !== text.split("\n").length) throw new Refusal(`${where}: a bundle variant moved its lines`);
          return { contents: rewritten, loader, resolveDir: dirname(path) };
        }
        return { contents, loader, resolveDir: dirname(path) };
      } finally {
        await handle.close();
      }
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      return { errors: [{ text: error.message }] };
    }
  }
}
