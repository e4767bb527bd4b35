import { randomUUID } from "node:crypto";
import { posix } from "node:path";
import { isHookboxError } from "../errors.js";
import type { SandboxLimits, SandboxPool, TenantSandboxOptions } from "../sandbox/api.js";
import { bundleUploadedFiles, invalidUpload, loaderFor, type FileDiagnostic } from "../sandbox/files-bundler.js";
import { typeCheckFilesIsolated } from "../check/check-isolated.js";
import type { ScriptVersionRecord, Store } from "../store/index.js";

/*
 * POST /v1/scripts: an upload becomes an immutable version only when it bundles from its own files, type-checks
 * as `hookbox check` would, and loads in a throwaway sandbox (its own isolate, disposed afterwards). Until then
 * nothing is stored, so a broken upload changes nothing.
 */

export interface UploadLimits {
  maxFiles: number;
  maxBytes: number;
  maxPathChars: number;
}

export const DEFAULT_UPLOAD_LIMITS: UploadLimits = { maxFiles: 64, maxBytes: 1024 * 1024, maxPathChars: 200 };

export interface Upload {
  name: string;
  entry: string;
  files: Record<string, string>;
}

export interface CreateVersionOptions {
  store: Store;
  pool: SandboxPool;
  tenant: string;
  limits?: Partial<SandboxLimits>;
  upload: Upload;
  /** The tenant's store quota: a version that would take the tenant over it is refused with STORE_QUOTA. */
  maxTenantBytes?: number;
  /** Where the throwaway sandbox goes: the tenant's isolation and cordon (owned by `tenant`, sharing its standing). */
  placement?: Pick<TenantSandboxOptions, "isolation" | "cordon">;
}

/** Why a file path is refused, or undefined: relative POSIX paths of script files, nothing climbing or hidden. */
export function badFilePath(path: string, maxChars: number): string | undefined {
  if (path.length === 0 || path.length > maxChars) return `a file path must have 1 to ${maxChars} characters`;
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "file paths must be relative";
  if (/[\\\0]/.test(path)) return "file paths use / and contain no backslash or NUL";
  if (path.split("/").some((segment) => segment === "" || segment === "." || segment === ".."))
    return "file paths may not contain empty, . or .. segments";
  if (loaderFor(path) === undefined)
    return `${posix.extname(path) || "no extension"}: only .ts, .tsx, .js, .mjs, .cjs, .jsx and .json files`;
  return undefined;
}

/** Validates, bundles, type-checks and loads an upload; stores it as the next version. Rejects with SCRIPT_INVALID. */
export async function createScriptVersion({
  store,
  pool,
  tenant,
  limits,
  upload,
  maxTenantBytes,
  placement = {},
}: CreateVersionOptions): Promise<ScriptVersionRecord> {
  const label = `${upload.name}@upload`;
  const pathProblems = Object.keys(upload.files).flatMap((file) => {
    const problem = badFilePath(file, DEFAULT_UPLOAD_LIMITS.maxPathChars);
    return problem ? [{ file, line: 1, column: 1, message: problem }] : [];
  });
  if (pathProblems.length) throw invalidUpload(label, pathProblems);
  const source = { files: upload.files, entry: upload.entry, label };
  const bundle = await bundleUploadedFiles(source);
  const checked = await typeCheckFilesIsolated(upload.files, upload.entry, { tenant });
  if (checked.errors.length) throw invalidUpload(label, checked.errors);
  const manifestName = await loadOnce(pool, { ...placement, owner: tenant }, limits, source);
  const warnings = checked.warnings.map((w) => `${w.file}:${w.line}:${w.column}: ${w.message}`);
  if (manifestName !== upload.name) {
    warnings.push(`defineScript names the script "${manifestName}": hook decisions and logs name it so, not "${upload.name}"`);
  }
  return store.createScriptVersion(
    {
      tenant,
      name: upload.name,
      entry: upload.entry,
      files: upload.files,
      bundleHash: bundle.hash,
      warnings,
      createdMs: Date.now(),
    },
    maxTenantBytes === undefined ? {} : { maxTenantBytes },
  );
}

/**
 * Loads the upload in a sandbox of its own, disposed afterwards; a load failure becomes a diagnostic. The
 * sandbox is its owner's (its isolation, cordon and standing): a throwaway name is no way onto a shared worker.
 */
async function loadOnce(
  pool: SandboxPool,
  placement: TenantSandboxOptions & { owner: string },
  limits: Partial<SandboxLimits> | undefined,
  source: { files: Record<string, string>; entry: string; label: string },
): Promise<string> {
  const throwaway = `${placement.owner}~check~${randomUUID()}`;
  try {
    const [manifest] = await pool.tenant(throwaway, limits, placement).load([source]);
    return manifest!.name;
  } catch (error) {
    if (isHookboxError(error) && error.code === "SCRIPT_INVALID") throw error;
    const message = error instanceof Error ? error.message.replace(`${source.label}: `, "") : String(error);
    throw invalidUpload(source.label, [{ ...positionIn(message, source), message: `load failed: ${message}` }]);
  } finally {
    pool.drop?.(throwaway);
  }
}

/** The first `file:line:col` of an uploaded file a load error mentions (its mapped stack), else the entry's start. */
function positionIn(message: string, source: { files: Record<string, string>; entry: string }): Omit<FileDiagnostic, "message"> {
  for (const match of message.matchAll(/([\w./-]+):(\d+):(\d+)/g)) {
    const file = match[1]!.replace(/^.*hookbox-upload:/, "");
    if (Object.hasOwn(source.files, file)) return { file, line: Number(match[2]), column: Number(match[3]) };
  }
  return { file: source.entry, line: 1, column: 1 };
}
