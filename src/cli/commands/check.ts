import { checkScripts } from "../../check/check-scripts.js";

const usage = "usage: hookbox check <script...>";

/**
 * `hookbox check`: type errors, then what run would refuse when it loads the scripts. Exit 0 when clean, 1 on
 * either, 2 when an input cannot be read (or no input).
 */
export async function checkCommand(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv.some((arg) => arg.startsWith("-"))) {
    const bad = argv.find((arg) => arg.startsWith("-"));
    process.stderr.write(`${bad && bad !== "--help" ? `hookbox check: unknown option "${bad}"\n` : ""}${usage}\n`);
    return 2;
  }
  const report = checkScripts(argv);
  for (const { file, reason } of report.unreadable) process.stderr.write(`hookbox check: cannot read ${file}: ${reason}\n`);
  if (report.unreadable.length > 0) return 2;
  for (const line of report.lines) process.stdout.write(`${line}\n`);
  // What run would refuse at load, beyond types (src/check/load-check.ts).
  const { loadErrors } = await import("../../check/load-check.js");
  const refused = await loadErrors(argv);
  for (const line of refused) process.stdout.write(`error ${line}\n`);
  const errors = report.diagnostics.filter((diagnostic) => diagnostic.category === "error").length + refused.length;
  if (errors > 0) {
    process.stderr.write(
      `hookbox check: ${errors} error${errors === 1 ? "" : "s"} in ${argv.length} script${argv.length === 1 ? "" : "s"}\n`,
    );
    return 1;
  }
  return 0;
}
