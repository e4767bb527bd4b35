import { ErrorCtor, JSONStringify, StringCtor, StringPrototypeIncludes, StringPrototypeSlice, defineHidden, dict } from "./primordials.js";
import { isGuestDataError } from "./serialize.js";
import {
  MAX_ERROR_CODE_CHARS,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_ERROR_NAME_CHARS,
  MAX_ERROR_STACK_CHARS,
} from "../src/sandbox/wire/error-limits.js";

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

/**
 * JSON text describing what a script threw: `{code, name, message, stack?, path?}`, every text clipped. It
 * never throws and reads the value only here, inside the segment that caught it, under the call's time limit:
 * a getter, a `toString` or a proxy trap that throws is read as nothing, one that loops is ended by the timeout.
 */
export function describeThrown(thrown: unknown, code = "SCRIPT_ERROR"): string {
  try {
    const description = dict<string | undefined>();
    description.code = code;
    if (isGuestDataError(thrown)) {
      // A value over the size limit is its own code, whatever else it is: the limit, not the contract, refused it.
      description.code = StringPrototypeIncludes(thrown.problem, "-byte limit") ? "PAYLOAD_TOO_LARGE" : "HOOK_CONTRACT";
      description.message = StringPrototypeSlice(thrown.problem, 0, MAX_ERROR_MESSAGE_CHARS);
      description.path = StringPrototypeSlice(thrown.path, 0, MAX_ERROR_MESSAGE_CHARS);
    } else if (thrown !== null && (typeof thrown === "object" || typeof thrown === "function")) {
      const error = thrown as { name?: unknown; message?: unknown; stack?: unknown; code?: unknown };
      description.name = readString(() => error.name, MAX_ERROR_NAME_CHARS) ?? "Error";
      description.message =
        readString(() => error.message, MAX_ERROR_MESSAGE_CHARS) ??
        readString(() => thrown, MAX_ERROR_MESSAGE_CHARS) ??
        "(unprintable value)";
      description.stack = readString(() => error.stack, MAX_ERROR_STACK_CHARS);
      // A capability error's code (CAPABILITY_DENIED, ...) is kept so the host's error names it.
      description.errorCode = readString(() => error.code, MAX_ERROR_CODE_CHARS);
    } else {
      description.name = "Error";
      description.message = "threw a non-error value: " + (readString(() => thrown, MAX_ERROR_MESSAGE_CHARS) ?? typeof thrown);
    }
    // Prototype-less: a toJSON a script put on Object.prototype is not consulted (it could replace the whole text).
    return JSONStringify(description) as string;
  } catch {
    return unreadable(code);
  }
}

/** What is said of a thrown value nothing could be read from (the catch never touches the value). */
export function unreadable(code: string): string {
  return '{"code":' + JSONStringify(code) + ',"name":"Error","message":"threw a value that could not be read"}';
}

/** An Error for the script, built by runtime code: carries a code and no host paths. */
export function guestError(message: string, code?: string): Error {
  const error = new ErrorCtor(message);
  // A prototype-less descriptor (defineHidden): a literal would inherit a `get` or `value` a script put on
  // Object.prototype, and the error could not be made (a capability's refusal would never reach the script).
  if (code !== undefined) defineHidden(error, "code", code);
  return error;
}
