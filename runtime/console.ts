import type { HostChannel, RuntimeLimits } from "./host-channel.js";
import {
  ArrayPrototypeJoin,
  ObjectDefineProperty,
  ObjectFreeze,
  StringCtor,
  StringPrototypeSlice,
  defineData,
  globalObject,
} from "./primordials.js";
import { toBoundedJson } from "./serialize.js";
import type { GuestLogLevel } from "../src/sandbox/wire/guest-ops.js";

const LEVELS: Record<string, GuestLogLevel> = { debug: "debug", log: "info", info: "info", warn: "warn", error: "error" };

function formatOne(value: unknown, limit: number): string {
  if (typeof value === "string") return value;
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return StringCtor(value);
  if (typeof value === "function") return "[function]";
  try {
    return toBoundedJson(value, limit);
  } catch {
    return "[unprintable object]";
  }
}

/** `console.*` becomes log events; formatting runs here, inside the callback's timed segment. */
export function installConsole(host: HostChannel, limits: RuntimeLimits): void {
  const methods: Record<string, (...values: unknown[]) => void> = {};
  const names = ["debug", "log", "info", "warn", "error"];
  for (let i = 0; i < names.length; i++) {
    const level = LEVELS[names[i]];
    methods[names[i]] = function (...values: unknown[]): void {
      const parts: string[] = [];
      for (let j = 0; j < values.length; j++) defineData(parts, j, formatOne(values[j], limits.maxLogChars));
      const message = StringPrototypeSlice(ArrayPrototypeJoin(parts, " "), 0, limits.maxLogChars);
      host("log", level, message);
    };
  }
  ObjectDefineProperty(globalObject, "console", { value: ObjectFreeze(methods), writable: true, configurable: true, enumerable: false });
}
