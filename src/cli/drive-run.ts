import type { HookboxEvent } from "../events/types.js";
import type { RunHandle } from "../host/types.js";
import { Transcript } from "./transcript.js";
import { printable } from "./terminal-text.js";
import { eventJson } from "../events/event-json.js";
import { exitCodeFor } from "./exit.js";
import { StdinAnswers } from "./stdin-answers.js";
import { stdoutClosed } from "./stdout.js";

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
  // Nobody reads the events any more (`| head -1`): the run stops rather than going on unseen.
  const onStdoutClosed = () => handle.cancel("stdout closed");
  stdoutClosed.addEventListener("abort", onStdoutClosed, { once: true });
  const interactive = !options.json && process.stdin.isTTY === true && process.stdout.isTTY === true;
  const stdin = new StdinAnswers(handle, { command: options.command, json: options.json, step: options.step, interactive });
  try {
    const transcript = options.json ? undefined : new Transcript();
    for await (const event of options.events ?? handle.events()) {
      printEvent(event, transcript);
      stdin.onEvent(event);
    }
    const result = await handle.wait();
    if (!options.json && result.status !== "completed" && result.reason && !stdoutClosed.aborted) {
      process.stderr.write(
        `hookbox ${options.command}: ${result.status}${result.errorCode ? ` (${printable(result.errorCode)})` : ""}: ${printable(result.reason)}\n`,
      );
    }
    return exitCodeFor(result.status);
  } finally {
    stdin.close();
    process.off("SIGINT", onSigint);
    stdoutClosed.removeEventListener("abort", onStdoutClosed);
  }
}

/** One event on stdout: JSON Lines (the event's own text, as stored and streamed), or the human transcript's lines. */
function printEvent(event: HookboxEvent, transcript: Transcript | undefined): void {
  if (stdoutClosed.aborted) return;
  const line = transcript ? transcript.line(event) : eventJson(event);
  if (line !== undefined) process.stdout.write(`${line}\n`);
}
