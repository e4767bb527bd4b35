import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { hookboxBin, repoRoot } from "./cli.js";

const driver = join(repoRoot, "test", "helpers", "pty-drive.py");

/** Ctrl-U: readline deletes the line typed so far (a prefilled one included). */
export const CLEAR_LINE = "\u0015";

/**
 * Runs `hookbox ARGS` in a real pseudo-terminal (test/helpers/pty-drive.py), so the CLI sees TTYs on stdin and
 * stdout exactly as at a person's terminal, and types each step's `send` once the output matches its `expect`.
 */
export function driveTty(args: string[], steps: { expect: string; send: string }[]): { output: string; status: number; timedOut: boolean } {
  const run = spawnSync("python3", [driver, JSON.stringify(steps), "--", process.execPath, hookboxBin, ...args], {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 90_000,
  });
  if (run.status !== 0) throw new Error(`pty driver failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}
