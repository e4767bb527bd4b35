import type { SerializedError } from "../../errors.js";
import { MAX_ERROR_MESSAGE_CHARS } from "../wire/error-limits.js";

/** A failure inside the worker that ends one callback (or one load) with a contract error code. */
export class Failure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    // Messages may quote what guest code threw: clipped as every error text that leaves the worker.
    super(clipText(message, MAX_ERROR_MESSAGE_CHARS));
  }

  serialize(): SerializedError {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** `text` cut to `max` characters, saying so. */
export function clipText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** The message of an error isolated-vm raised in this process (a host object, not guest data). */
export function messageOf(error: unknown): string {
  return clipText(String((error as Error | undefined)?.message ?? error), MAX_ERROR_MESSAGE_CHARS);
}

export function isTimeoutError(error: unknown): boolean {
  return error instanceof Error && /timed out/i.test(error.message);
}
