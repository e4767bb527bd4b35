import { HookboxError } from "../errors.js";
import type { FinalStatus } from "../events/types.js";

/** Exit codes (docs/cli.md): 0 completed, 1 failed, 2 usage/config/load, 3 aborted by a hook, 130 cancelled. */
export function exitCodeFor(status: FinalStatus): number {
  switch (status) {
    case "completed":
      return 0;
    case "aborted":
      return 3;
    case "cancelled":
      return 130;
    default:
      return 1;
  }
}

/** One clear line on stderr naming what was wrong, and exit code 2. */
export function failUsage(command: string, error: unknown): number {
  const message =
    error instanceof HookboxError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  process.stderr.write(`hookbox ${command}: ${message.split("\n")[0]}\n`);
  return 2;
}
