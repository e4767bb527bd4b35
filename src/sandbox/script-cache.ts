import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { version as esbuildVersion } from "esbuild";
import { restoreBundle, sandboxBuildOptions, type Bundle } from "./bundle-output.js";
import type { BundleBounds } from "./bundle-guard.js";
import { packageVersion } from "../package-root.js";

/*
 * Bundles as a restart finds them (docs/server.md, "Start-up"): each script's bundle kept on disk, so a server
 * that starts again builds its tenants without running esbuild for scripts it bundled before.
 *
 * An entry is found by its source (the entry file's path, or the source text and its name) and the bundle's
 * bounds, and used only while every file the bundle was built from has the SHA-256 it had then: a file edited,
 * replaced or removed is a miss and is bundled again. Entries live under a directory named by what produced them
 * (hookbox's and esbuild's versions, the build options), so another hookbox never reads what this one
 * wrote. The directory is the host's own: created 0700, refused when another user owns it or others may write to
 * it, since what is in it becomes a tenant's code. Files are written whole (a temporary file renamed), so a crash
 * never leaves half of one, and an entry that does not parse is a miss.
 */

/** A script as the bundler takes it from disk or as text. */
export type CachedSource = { path: string } | { filename: string; source: string };

interface SourceEntry {
  /** Each file the bundle was built from, with the SHA-256 of its content then. */
  inputs: [path: string, sha256: string][];
  bundle: string;
}

interface BundleEntry {
  code: string;
  map: string;
  defaultName: string;
}

export class ScriptCache {
  private constructor(readonly dir: string) {}

  /** The cache under `dir`, or why it cannot be used there (the caller runs without it and says so). */
  static open(dir: string): ScriptCache | { problem: string } {
    const root = resolve(dir);
    try {
      mkdirSync(root, { recursive: true, mode: 0o700 });
      const stat = lstatSync(root);
      if (!stat.isDirectory()) return { problem: `${root} is not a directory` };
      if (typeof process.getuid === "function" && stat.uid !== process.getuid())
        return { problem: `${root} belongs to another user (uid ${stat.uid})` };
      if ((stat.mode & 0o022) !== 0) return { problem: `${root} may be written by other users (mode ${(stat.mode & 0o777).toString(8)})` };
      const own = join(root, `v-${producerKey()}`);
      for (const kind of ["sources", "bundles"]) mkdirSync(join(own, kind), { recursive: true, mode: 0o700 });
      return new ScriptCache(own);
    } catch (error) {
      return { problem: `${root}: ${(error as Error).message}` };
    }
  }

  /** The bundle of `source` built before from files unchanged since, with the paths of those files. */
  bundle(source: CachedSource, bounds: BundleBounds, displayPath: string): { bundle: Bundle; inputs: string[] } | undefined {
    const entry = this.read<SourceEntry>("sources", sourceKey(source, bounds));
    if (!entry || !Array.isArray(entry.inputs) || typeof entry.bundle !== "string") return undefined;
    for (const [path, sha256] of entry.inputs) if (fileHash(path) !== sha256) return undefined;
    const stored = this.read<BundleEntry>("bundles", entry.bundle);
    if (!stored || typeof stored.code !== "string" || typeof stored.map !== "string") return undefined;
    try {
      const bundle = restoreBundle({ code: stored.code, map: stored.map, defaultName: String(stored.defaultName), displayPath });
      // The file's name is its content's hash: a bundle file that was altered is a miss, not a tenant's code.
      if (bundle.hash !== entry.bundle) return undefined;
      return { bundle, inputs: entry.inputs.map(([path]) => path) };
    } catch {
      return undefined;
    }
  }

  /** Keeps a bundle esbuild just built from `inputs`; best effort (a full disk costs the next start its bundling). */
  store(source: CachedSource, bounds: BundleBounds, built: { bundle: Bundle; map: string; inputs: readonly string[] }): void {
    const inputs: [string, string][] = [];
    for (const path of built.inputs) {
      const hash = fileHash(path);
      if (hash === undefined) return;
      inputs.push([path, hash]);
    }
    const { bundle } = built;
    this.write("bundles", bundle.hash, { code: bundle.code, map: built.map, defaultName: bundle.defaultName } satisfies BundleEntry);
    this.write("sources", sourceKey(source, bounds), { inputs, bundle: bundle.hash } satisfies SourceEntry);
  }

  private read<T>(kind: string, key: string): T | undefined {
    try {
      return JSON.parse(readFileSync(join(this.dir, kind, `${key}.json`), "utf8")) as T;
    } catch {
      return undefined;
    }
  }

  private write(kind: string, key: string, value: unknown): void {
    const file = join(this.dir, kind, `${key}.json`);
    const temporary = `${file}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, JSON.stringify(value), { mode: 0o600 });
      renameSync(temporary, file);
    } catch {
      // Best effort, as above.
    }
  }
}

/** Where a server keeps its bundles unless told otherwise: the user's cache directory (XDG), under hookbox/. */
export function defaultScriptCacheDir(): string {
  const base =
    process.env.XDG_CACHE_HOME && resolve(process.env.XDG_CACHE_HOME) === process.env.XDG_CACHE_HOME
      ? process.env.XDG_CACHE_HOME
      : join(homedir(), ".cache");
  return join(base, "hookbox", "scripts");
}

function sha256(...parts: string[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\0");
  return hash.digest("hex");
}

function fileHash(path: string): string | undefined {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return undefined;
  }
}

function sourceKey(source: CachedSource, bounds: BundleBounds): string {
  const what = "path" in source ? ["path", resolve(source.path)] : ["source", resolve(source.filename), source.source];
  return sha256(...what, JSON.stringify(bounds));
}

let producer: string | undefined;

/**
 * What a bundle depends on besides its files: a change of any starts a cache directory of its own. The
 * hookbox version stands for the bundler's own code (how "hookbox" imports and every file are resolved).
 */
function producerKey(): string {
  producer ??= sha256("hookbox script cache 1", packageVersion(), esbuildVersion, JSON.stringify(sandboxBuildOptions)).slice(0, 24);
  return producer;
}
