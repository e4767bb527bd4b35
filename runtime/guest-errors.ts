import { ErrorCtor, JSONStringify, ObjectDefineProperty, StringCtor, StringPrototypeSlice } from "./primordials.js";
import { GuestDataError } from "./serialize.js";

const MAX_MESSAGE = 4096;
const MAX_STACK = 16384;

/** Reads one property of a thrown value without letting a hostile getter or toString escape the timed segment. */
function readString(read: () => unknown, max: number): string | undefined {
  try {
    const value = read();
    if (value === undefined || value === null) return undefined;
    return StringPrototypeSlice(typeof value === "string" ? value : StringCtor(value), 0, max);
  } catch {
    return undefined;
  }
}

/** JSON text describing what a script threw: `{code, name, message, stack?, path?}`. */
export function describeThrown(thrown: unknown, code = "SCRIPT_ERROR"): string {
  if (thrown instanceof GuestDataError) {
    return JSONStringify({ code: "HOOK_CONTRACT", message: thrown.problem, path: thrown.path });
  }
  if (thrown !== null && (typeof thrown === "object" || typeof thrown === "function")) {
    const error = thrown as { name?: unknown; message?: unknown; stack?: unknown };
    const name = readString(() => error.name, 200) ?? "Error";
    const message = readString(() => error.message, MAX_MESSAGE) ?? readString(() => thrown, MAX_MESSAGE) ?? "(unprintable value)";
    const stack = readString(() => error.stack, MAX_STACK);
    // A capability error's code (CAPABILITY_DENIED, ...) is kept so the host's error names it.
    const errorCode = readString(() => (error as { code?: unknown }).code, 64);
    return JSONStringify({ code, name, message, stack, errorCode });
  }
  return JSONStringify({
    code,
    name: "Error",
    message: "threw a non-error value: " + (readString(() => thrown, MAX_MESSAGE) ?? typeof thrown),
  });
}

/** An Error for the script, built by runtime code: carries a code and no host paths. */
export function guestError(message: string, code?: string): Error {
  const error = new ErrorCtor(message);
  if (code !== undefined) ObjectDefineProperty(error, "code", { value: code, writable: true, configurable: true });
  return error;
}
