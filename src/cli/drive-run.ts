import type { HookboxEvent } from "../events/types.js";
import type { RunHandle } from "../host/types.js";
import { describeEvent } from "./transcript.js";
import { printable } from "./terminal-text.js";
import { exitCodeFor } from "./exit.js";
import { StdinAnswers } from "./stdin-answers.js";

export interface DriveOptions {
  command: string;
  json: boolean;
  step: boolean;
  /** The events to print (default: the handle's own stream). */
  events?: AsyncIterable<HookboxEvent>;
}

/**
 * Follows a run on the terminal, as `hookbox run` and `hookbox resume` do: events on stdout (JSON Lines with
 * --json), SIGINT cancels at once, and stdin continues pauses and answers approvals (stdin-answers.ts).
 * Returns the exit code.
 */
export async function driveRun(handle: RunHandle, options: DriveOptions): Promise<number> {
  const onSigint = () => handle.cancel("cancelled by SIGINT");
  process.on("SIGINT", onSigint);
  const interactive = !options.json && process.stdin.isTTY === true && process.stdout.isTTY === true;
  const stdin = new StdinAnswers(handle, { command: options.command, json: options.json, step: options.step, interactive });
  try {
    for await (const event of options.events ?? handle.events()) {
      printEvent(event, options.json);
      stdin.onEvent(event);
    }
    const result = await handle.wait();
    if (!options.json && result.status !== "completed" && result.reason) {
      process.stderr.write(
        `hookbox ${options.command}: ${result.status}${result.errorCode ? ` (${printable(result.errorCode)})` : ""}: ${printable(result.reason)}\n`,
      );
    }
    return exitCodeFor(result.status);
  } finally {
    stdin.close();
    process.off("SIGINT", onSigint);
  }
}

export function printEvent(event: HookboxEvent, json: boolean): void {
  const line = json ? JSON.stringify(event) : describeEvent(event);
  if (line !== undefined) process.stdout.write(`${line}\n`);
}
