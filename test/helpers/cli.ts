import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";

export const repoRoot = join(import.meta.dirname, "..", "..");
export const hookboxBin = join(repoRoot, "bin", "hookbox.js");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `hookbox` bin in a child process. */
export function startCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): { child: ChildProcessWithoutNullStreams; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [hookboxBin, ...args], { cwd: options.cwd ?? repoRoot, env: { ...process.env, ...options.env } });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

export const runCli = (args: string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }) => startCli(args, options).done;

export const jsonLines = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** Runs any command in a child process (a policy project's `npm test`, `node --test`, tsc) from `cwd`. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...options.env } });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (data) => (stdout += data));
    child.stderr.setEncoding("utf8").on("data", (data) => (stderr += data));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
