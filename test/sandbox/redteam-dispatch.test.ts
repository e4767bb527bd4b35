import { describe, expect, it } from "vitest";
import { beforePayload, middlewareCtx, toolCtx, turn } from "./helpers.js";
import { attackLimits, attacker, redTeamPool } from "./redteam-helpers.js";

/*
 * Red team: built-ins replaced so that the runtime's own code, reached from the worker's entry point, throws a
 * value whose getters never return. isolated-vm reads a value thrown out of the isolate after the call's timeout
 * stopped counting, so such a throw escaping the runtime would hang the worker until the supervisor kills it, with
 * every co-tenant's call on it. The runtime uses only built-ins captured before any script code ran, and catches
 * what a script throws without touching it: each call after the tampering ends the way the script's own code
 * decides, or with the isolate's own limit, never with the supervisor's kill.
 */
// A long grace: a script's CPU limit on a loaded machine can take seconds of wall time, and the supervisor's kill
// must not come first; a throw that escaped the isolate hangs the worker for good, so it is still killed.
const { pool, good } = redTeamPool({ workers: 2, killGraceMs: 5000 });

const BOMB = `() => { throw { get message() { while (true) {} }, get stack() { while (true) {} } }; }`;
const indexGetters = Array.from(
  { length: 6 },
  (_, index) => `Object.defineProperty(Array.prototype, "${index}", { get: bomb, set: bomb, configurable: true });`,
).join(" ");

/** Names the runtime reads from objects (its own and the script's): accessors on Object.prototype for each. */
const READ_NAMES = [
  "get",
  "set",
  "value",
  "writable",
  "enumerable",
  "configurable",
  "then",
  "toJSON",
  "kind",
  "type",
  "ok",
  "args",
  "error",
  "code",
  "name",
  "data",
  "metadata",
  "lazy",
  "settled",
  "pending",
  "resolved",
  "action",
  "reason",
  "result",
  "id",
  "callId",
  "status",
  "default",
  "hooks",
  "tools",
  "middleware",
  "handler",
];
const prototypeGetters = READ_NAMES.map(
  (name) => `Object.defineProperty(Object.prototype, "${name}", { get: bomb, set: bomb, configurable: true });`,
).join(" ");

/** What each case does to the script's own context before the calls that follow. */
const TAMPERING: Record<string, string> = {
  "the array iterator": `Array.prototype[Symbol.iterator] = bomb;`,
  "array index accessors": indexGetters,
  "accessors on Object.prototype": prototypeGetters,
  "a thenable Object.prototype": `Object.defineProperty(Object.prototype, "then", { get: bomb, configurable: true });`,
  "Promise.prototype.then": `Promise.prototype.then = bomb;`,
  "a toJSON on Object.prototype": `Object.defineProperty(Object.prototype, "toJSON", { get: bomb, configurable: true });`,
  "Function.prototype's call, apply and bind": `Function.prototype.call = bomb; Function.prototype.apply = bomb; Function.prototype.bind = bomb;`,
  "the error constructors": `globalThis.Error = bomb; globalThis.TypeError = bomb; globalThis.RangeError = bomb;`,
  "the string iterator and methods": `String.prototype[Symbol.iterator] = bomb; String.prototype.slice = bomb; String.prototype.includes = bomb;`,
  JSON: `JSON.parse = bomb; JSON.stringify = bomb;`,
};

const body = (tampering: string) => `{
  hooks: {
    beforeToolCall(p) {
      if (p.call.name === "tamper") { const bomb = ${BOMB}; ${tampering} }
      return { action: "deny", reason: "fine" };
    },
  },
  middleware: [async function pass(turn, next) { return next(turn); }],
  tools: [{ name: "echo", description: "", handler(args) { return { echoed: 1 }; } }],
}`;

/** A call ends as the script decided, or fails on the isolate's own terms: never by the supervisor's kill. */
async function settledInsideTheIsolate(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    expect(message, `${code}: ${message}`).not.toContain("the sandbox worker was killed");
    expect(message, `${code}: ${message}`).not.toContain("is gone");
  }
}

describe("red team: built-ins replaced under the runtime's entry point", () => {
  for (const [name, tampering] of Object.entries(TAMPERING)) {
    it(`${name}: every later call settles inside the isolate`, async () => {
      const { run } = await attacker(pool, body(tampering), attackLimits);
      await settledInsideTheIsolate(run.callHook("attack", "beforeToolCall", beforePayload("tamper")));
      await settledInsideTheIsolate(run.callHook("attack", "beforeToolCall", beforePayload("again")));
      await settledInsideTheIsolate(run.callTool("attack", "echo", { n: 1 }, toolCtx));
      await settledInsideTheIsolate(run.callMiddleware("attack", "pass", turn(), middlewareCtx, async (t) => t));
      await good.served();
    });
  }
});
