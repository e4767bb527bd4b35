import { parseArgs } from "node:util";
import { HookboxError } from "../../errors.js";
import { runDoctor } from "../../sandbox/wall/doctor-checks.js";
import { wallModeFlag } from "../../sandbox/wall/mode.js";
import { failUsage } from "../exit.js";

const usage = "usage: hookbox doctor [--json] [--wall auto|required|none]";

/**
 * `hookbox doctor`: the protections in effect for sandbox workers on this host, one line per check
 * (`--json`: one object). Exit 0 when every check holds, 1 otherwise.
 */
export async function doctorCommand(argv: string[]): Promise<number> {
  let flags: { json: boolean; wall: ReturnType<typeof wallModeFlag> };
  try {
    const { values } = parseArgs({ args: argv, options: { json: { type: "boolean" }, wall: { type: "string" } }, strict: true });
    flags = { json: values.json ?? false, wall: wallModeFlag(values.wall) };
  } catch (error) {
    return failUsage("doctor", error instanceof HookboxError ? error : new HookboxError("USAGE", `${(error as Error).message} (${usage})`));
  }
  const report = await runDoctor(flags.wall ?? "auto");
  if (flags.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    for (const check of report.checks) process.stdout.write(`${check.ok ? "ok  " : "FAIL"} ${check.name}: ${check.detail}\n`);
    process.stdout.write(report.ok ? "every check holds\n" : "some checks do not hold\n");
  }
  return report.ok ? 0 : 1;
}
