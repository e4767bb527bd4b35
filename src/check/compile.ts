import ts from "typescript";
import { join } from "node:path";
import { packageRoot } from "../package-root.js";
import { applyInsertions, hookAnnotations, originalPosition, type Insertion } from "./hook-annotations.js";

/** Where `import ... from "hookbox"` resolves for `hookbox check`: this package's types/. */
export function hookboxTypesDir(): string {
  return join(packageRoot(), "types");
}

/**
 * The options scripts are checked with: strict, ES2022 without DOM or Node (the sandbox has neither),
 * bundler-style resolution (esbuild bundles relative imports), and "hookbox" mapped to types/hookbox.d.ts.
 */
export function scriptCompilerOptions(typesDir: string = hookboxTypesDir()): ts.CompilerOptions {
  return {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ["lib.es2022.d.ts"],
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowJs: true,
    checkJs: true,
    skipLibCheck: true,
    types: [],
    noFallthroughCasesInSwitch: true,
    paths: { hookbox: [join(typesDir, "hookbox.d.ts")] },
  };
}

export interface ScriptDiagnostic {
  file?: string;
  line?: number;
  column?: number;
  code: number;
  category: "error" | "warning" | "suggestion" | "message";
  message: string;
}

/**
 * Type-checks `rootNames` against the hookbox types. `overlay` supplies in-memory files by absolute path
 * (used to check snippets without touching the disk). Hooks are checked return by return (hook-annotations.ts).
 */
export function typeCheck(
  rootNames: string[],
  overlay: ReadonlyMap<string, string> = new Map(),
  options = scriptCompilerOptions(),
  confine?: (file: string) => boolean,
): ScriptDiagnostic[] {
  const hookboxDts = (options.paths?.hookbox?.[0] ?? "").replace(/\\/g, "/");
  const overlayHost = (files: ReadonlyMap<string, string>) => confinedHost(hostWithOverlay(options, files), files, confine);
  const first = ts.createProgram({ rootNames, options, host: overlayHost(overlay) });
  const checker = first.getTypeChecker();
  const annotated = new Map(overlay);
  const insertionsByFile = new Map<string, Insertion[]>();
  for (const source of first.getSourceFiles()) {
    if (first.isSourceFileDefaultLibrary(source) || source.fileName.includes("/node_modules/")) continue;
    const insertions = hookAnnotations(checker, source, hookboxDts);
    if (insertions.length === 0) continue;
    insertionsByFile.set(source.fileName, insertions);
    annotated.set(source.fileName, applyInsertions(source.text, insertions));
  }
  if (insertionsByFile.size === 0) return ts.getPreEmitDiagnostics(first).map((diagnostic) => toScriptDiagnostic(diagnostic));
  const second = ts.createProgram({ rootNames, options, host: overlayHost(annotated), oldProgram: first });
  return ts.getPreEmitDiagnostics(second).map((diagnostic) => {
    const insertions = diagnostic.file && insertionsByFile.get(diagnostic.file.fileName);
    const original = insertions ? first.getSourceFile(diagnostic.file!.fileName) : undefined;
    if (!insertions || !original || diagnostic.start === undefined) return toScriptDiagnostic(diagnostic);
    return toScriptDiagnostic(diagnostic, original, originalPosition(diagnostic.start, insertions));
  });
}

/**
 * With `confine`, the compiler sees only the overlay and the files `confine` admits (the standard library,
 * the hookbox types): an uploaded script cannot make the checker read, or reveal, anything else on the host.
 */
function confinedHost(host: ts.CompilerHost, overlay: ReadonlyMap<string, string>, confine?: (file: string) => boolean): ts.CompilerHost {
  if (confine === undefined) return host;
  const admitted = (file: string) => overlay.has(file) || confine(file);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => admitted(file) && fileExists.call(host, file);
  host.readFile = (file) => (admitted(file) ? readFile.call(host, file) : undefined);
  host.getSourceFile = (file, language, onError, create) =>
    admitted(file) ? getSourceFile.call(host, file, language, onError, create) : undefined;
  // The hookbox types' own folder must exist for their relative imports (types/hookbox.d.ts re-exports
  // ./decisions.js) to resolve; any other folder exists only if the overlay holds a file in it.
  host.directoryExists = (dir) => {
    const folder = `${dir.replace(/\/$/, "")}/`;
    return confine(folder) || [...overlay.keys()].some((file) => file.startsWith(folder));
  };
  host.getDirectories = () => [];
  host.realpath = (file) => file;
  return host;
}

function hostWithOverlay(options: ts.CompilerOptions, overlay: ReadonlyMap<string, string>): ts.CompilerHost {
  const host = ts.createCompilerHost(options, true);
  if (overlay.size === 0) return host;
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => overlay.has(file) || fileExists.call(host, file);
  host.readFile = (file) => overlay.get(file) ?? readFile.call(host, file);
  host.getSourceFile = (file, language, onError, create) => {
    const text = overlay.get(file);
    return text !== undefined ? ts.createSourceFile(file, text, language, true) : getSourceFile.call(host, file, language, onError, create);
  };
  return host;
}

function toScriptDiagnostic(diagnostic: ts.Diagnostic, file = diagnostic.file, start = diagnostic.start): ScriptDiagnostic {
  const category = ts.DiagnosticCategory[diagnostic.category].toLowerCase() as ScriptDiagnostic["category"];
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n  ").replaceAll('import("hookbox").', "");
  if (!file || start === undefined) return { code: diagnostic.code, category, message };
  const { line, character } = file.getLineAndCharacterOfPosition(start);
  return { file: file.fileName, line: line + 1, column: character + 1, code: diagnostic.code, category, message };
}

/** `file:line:col - error TSnnnn: message`, the format tsc uses with --pretty false. */
export function formatDiagnostic(diagnostic: ScriptDiagnostic, displayFile: (file: string) => string = (file) => file): string {
  const where = diagnostic.file ? `${displayFile(diagnostic.file)}:${diagnostic.line}:${diagnostic.column} - ` : "";
  return `${where}${diagnostic.category} TS${diagnostic.code}: ${diagnostic.message}`;
}
