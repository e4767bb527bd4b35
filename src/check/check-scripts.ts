import { accessSync, constants, readFileSync, statSync } from "node:fs";
import ts from "typescript";
import { isAbsolute, relative, resolve } from "node:path";
import { formatDiagnostic, typeCheck, type ScriptDiagnostic } from "./compile.js";
import { unreturnedDecisions } from "./unreturned-decisions.js";

export interface CheckReport {
  /** Inputs that could not be read, each with the reason. Nothing is type-checked when any exists. */
  unreadable: { file: string; reason: string }[];
  diagnostics: ScriptDiagnostic[];
  /**
   * One `file:line:col - error TSnnnn: message` line per diagnostic, files relative to `cwd`, then one
   * `file:line:col - warning: ...` per decision a hook builds and never returns (unreturned-decisions.ts).
   */
  lines: string[];
}

/** Type-checks script files (and what they import) against the hookbox types. */
export function checkScripts(files: string[], cwd: string = process.cwd()): CheckReport {
  const unreadable = files.flatMap((file) => {
    const reason = unreadableReason(resolve(cwd, file));
    return reason ? [{ file, reason }] : [];
  });
  if (unreadable.length > 0) return { unreadable, diagnostics: [], lines: [] };
  const diagnostics = typeCheck(files.map((file) => resolve(cwd, file)));
  const display = (file: string) => {
    const rel = relative(cwd, file);
    return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
  };
  const warnings = files.flatMap((file) => {
    const path = resolve(cwd, file);
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.ES2022, true);
    return unreturnedDecisions(source).map((found) => `${display(path)}:${found.line}:${found.column} - warning: ${found.message}`);
  });
  return { unreadable, diagnostics, lines: [...diagnostics.map((diagnostic) => formatDiagnostic(diagnostic, display)), ...warnings] };
}

function unreadableReason(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return "not a file";
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (error as Error).message;
  }
}
