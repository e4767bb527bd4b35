import ts from "typescript";
import { dirname, posix } from "node:path";
import { hookboxTypesDir, scriptCompilerOptions, typeCheck } from "./compile.js";
import type { FileDiagnostic } from "../sandbox/files-bundler.js";

/*
 * `hookbox check` for an uploaded file map (POST /v1/scripts): the same compiler options and hook return
 * checks, over files that exist only in memory under a virtual root. The compiler may read nothing else
 * but the TypeScript standard library and the hookbox types.
 */

const VIRTUAL_ROOT = "/__hookbox_upload__";

/** Type errors of `entry` and what it imports, positioned in the uploaded files (paths as uploaded). */
export function typeCheckFiles(files: Record<string, string>, entry: string): { errors: FileDiagnostic[]; warnings: FileDiagnostic[] } {
  const overlay = new Map(Object.entries(files).map(([file, text]) => [`${VIRTUAL_ROOT}/${file}`, text]));
  const libDir = dirname(ts.getDefaultLibFilePath({})).replace(/\\/g, "/");
  const typesDir = hookboxTypesDir().replace(/\\/g, "/");
  const admitted = (file: string) => file.startsWith(`${libDir}/`) || file.startsWith(`${typesDir}/`);
  const diagnostics = typeCheck([`${VIRTUAL_ROOT}/${entry}`], overlay, scriptCompilerOptions(), admitted);
  const shown = diagnostics.map((diagnostic) => ({
    file: diagnostic.file?.startsWith(`${VIRTUAL_ROOT}/`) ? posix.relative(VIRTUAL_ROOT, diagnostic.file) : (diagnostic.file ?? entry),
    line: diagnostic.line ?? 1,
    column: diagnostic.column ?? 1,
    message: `TS${diagnostic.code}: ${diagnostic.message}`,
    category: diagnostic.category,
  }));
  const strip = ({ category: _category, ...rest }: (typeof shown)[number]): FileDiagnostic => rest;
  return {
    errors: shown.filter((diagnostic) => diagnostic.category === "error").map(strip),
    warnings: shown.filter((diagnostic) => diagnostic.category !== "error").map(strip),
  };
}
