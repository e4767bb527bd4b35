import type { SerializedError } from "../../errors.js";

/** A failure inside the worker that ends one callback (or one load) with a contract error code. */
export class Failure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  serialize(): SerializedError {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isTimeoutError(error: unknown): boolean {
  return error instanceof Error && /timed out/i.test(error.message);
}
