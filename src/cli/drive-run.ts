import { createInterface } from "node:readline";
import type { HookboxEvent } from "../events/types.js";
import type { RunHandle } from "../loop/handle.js";
import { describeEvent } from "./transcript.js";
import { exitCodeFor } from "./exit.js";

export interface DriveOptions {
  command: string;
  json: boolean;
  step: boolean;
  /** The events to print (default: the handle's own stream). */
  events?: AsyncIterable<HookboxEvent>;
}

/**
 * Follows a run on the terminal, as `hookbox run` and `hookbox resume` do: events on stdout (JSON Lines with
 * --json), SIGINT cancels at once, and in step mode stdin continues pauses. Returns the exit code.
 */
export async function driveRun(handle: RunHandle, options: DriveOptions): Promise<number> {
  const onSigint = () => handle.cancel("cancelled by SIGINT");
  process.on("SIGINT", onSigint);
  const stopStdin = options.step ? listenForContinue(handle, options) : () => {};
  try {
    for await (const event of options.events ?? handle.events()) printEvent(event, options.json);
    const result = await handle.wait();
    if (!options.json && result.status !== "completed" && result.reason) {
      process.stderr.write(
        `hookbox ${options.command}: ${result.status}${result.errorCode ? ` (${result.errorCode})` : ""}: ${result.reason}\n`,
      );
    }
    return exitCodeFor(result.status);
  } finally {
    stopStdin();
    process.off("SIGINT", onSigint);
  }
}

export function printEvent(event: HookboxEvent, json: boolean): void {
  const line = json ? JSON.stringify(event) : describeEvent(event);
  if (line !== undefined) process.stdout.write(`${line}\n`);
}

/**
 * With --json, a line `{"continue":"<pauseId>"}` continues that pause; without it, any line continues the
 * current pause. Bad lines are reported on stderr and ignored (the run is not harmed).
 */
function listenForContinue(handle: RunHandle, options: DriveOptions): () => void {
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    if (!options.json) {
      const current = handle.pauseId;
      if (current) handle.continue(current);
      return;
    }
    if (!line.trim()) return;
    let pauseId: unknown;
    try {
      pauseId = (JSON.parse(line) as { continue?: unknown }).continue;
    } catch {
      /* reported below */
    }
    if (typeof pauseId !== "string") {
      process.stderr.write(`hookbox ${options.command}: stdin: expected {"continue":"<pauseId>"}, got ${line.slice(0, 80)}\n`);
    } else if (!handle.continue(pauseId)) {
      process.stderr.write(`hookbox ${options.command}: stdin: ${pauseId} is not this run's open pause\n`);
    }
  });
  return () => lines.close();
}
