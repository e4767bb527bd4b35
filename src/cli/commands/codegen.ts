import { isAbsolute, join, relative, resolve } from "node:path";
import { HookboxError } from "../../errors.js";
import { loadSpec, renderAll, SPEC_PATH, staleFiles, writeAll } from "../../../codegen/generate.js";
import { packageRoot } from "../../package-root.js";

const usage = "usage: hookbox codegen [--check] [--spec FILE] [--out DIR]";

/**
 * `hookbox codegen`: regenerates the key constants, sandbox constants and types/turns.d.ts from codegen/spec.json.
 * `--check` writes nothing and exits 1 naming each generated file that differs from what the spec produces.
 * `--spec` / `--out` point at another spec or output root (tests; defaults are the package's own).
 */
export async function codegenCommand(argv: string[]): Promise<number> {
  let check = false;
  let specFile: string | undefined;
  let outRoot: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index];
    if (arg === "--check") check = true;
    else if ((arg === "--spec" || arg === "--out") && argv[index + 1] !== undefined) {
      const value = resolve(argv[++index]!);
      if (arg === "--spec") specFile = value;
      else outRoot = value;
    } else {
      process.stderr.write(`hookbox codegen: unexpected argument "${arg}"\n${usage}\n`);
      return 2;
    }
  }

  const root = packageRoot();
  const spec = specFile ?? join(root, SPEC_PATH);
  const out = outRoot ?? root;
  let files;
  try {
    files = renderAll(loadSpec(spec, displayPath(spec)));
  } catch (error) {
    if (!(error instanceof HookboxError)) throw error;
    process.stderr.write(`hookbox codegen: ${error.message}\n`);
    return 2;
  }

  if (check) {
    const stale = staleFiles(out, files);
    for (const path of stale)
      process.stderr.write(`hookbox codegen: ${path} is stale: it differs from what ${displayPath(spec)} produces (run npm run codegen)\n`);
    if (stale.length === 0) process.stdout.write(`hookbox codegen: ${files.length} generated files are up to date\n`);
    return stale.length === 0 ? 0 : 1;
  }
  for (const path of writeAll(out, files)) process.stdout.write(`wrote ${path}\n`);
  return 0;
}

function displayPath(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
}
