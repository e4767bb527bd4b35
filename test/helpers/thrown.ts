import { expect } from "vitest";
import { isHookboxError } from "../../src/errors.js";

/** A HookboxError's fields as a test compares them. */
export interface ThrownError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** The HookboxError `run` throws; the test fails when it returns or throws anything else. */
export function thrownHookboxError(run: () => unknown): ThrownError {
  try {
    run();
  } catch (error) {
    expect(isHookboxError(error), String(error)).toBe(true);
    return error as ThrownError;
  }
  throw new Error("expected a HookboxError, nothing was thrown");
}
