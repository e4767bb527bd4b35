import { describe, expect, it } from "vitest";
import { beforePayload, middlewareCtx, turn } from "./helpers.js";
import { attacker, redTeamPool } from "./redteam-helpers.js";

/*
 * Red team: the size of one reply. Each payload a script sends out (a settled value, a request to the host, a
 * log line) is bounded by itself, in characters, but one segment may send many of them, and a character is up to
 * three bytes on the wire. The host treats a reply frame over its cap (4 * maxPayloadBytes + 1 MiB) as a broken
 * protocol and kills the worker, with every co-tenant's call on it; so the worker keeps each reply's payloads
 * within a byte budget under that cap, and what would pass it fails the script's own call or drops its log
 * lines. One shared worker with a small payload limit (64 KiB: the cap is then 1.31 MB).
 */
const { pool, good } = redTeamPool({ workers: 1, maxPayloadBytes: 64 * 1024 });

const limits = { cpuMs: 2000, wallMs: 5000, memoryMb: 64 };

/** The call ends however it ends, but never by the worker's death; the worker is the one it was. */
async function survives(call: Promise<unknown>, workerBefore: number | undefined): Promise<string | undefined> {
  let ended: string | undefined;
  try {
    await call;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    expect(message, `${code}: ${message}`).not.toMatch(/worker was killed|worker was lost|is gone|broke the protocol/);
    ended = code;
  }
  expect(pool.workers().map((worker) => worker.pid)).toContain(workerBefore);
  await good.served();
  return ended;
}

describe("red team: a reply bigger than its frame cap", () => {
  it.each([
    [
      "sixteen capability requests of three-byte characters in flight at once",
      `async beforeToolCall(p) { await Promise.all(Array.from({ length: 16 }, (_, i) => p.kv.set("k" + i, "€".repeat(60_000)))); return { action: "proceed" }; }`,
      "PAYLOAD_TOO_LARGE",
    ],
    [
      "a hundred log lines of three-byte characters, then a big value",
      `beforeToolCall() { for (let i = 0; i < 100; i++) console.log("€".repeat(4096)); return { action: "deny", reason: "€".repeat(60_000) }; }`,
      undefined, // the value goes out whole; the lines past the reply's log budget are dropped and counted
    ],
  ])("%s: the worker lives on", async (_label, hook, code) => {
    await good.served();
    const workerBefore = pool.workers()[0]!.pid;
    const { run } = await attacker(pool, `{ hooks: { ${hook} } }`, limits);
    expect(await survives(run.callHook("attack", "beforeToolCall", beforePayload()), workerBefore)).toBe(code);
  });

  it("fourteen callbacks failing in one segment with the longest errors a script can throw: the worker lives on", async () => {
    await good.served();
    const workerBefore = pool.workers()[0]!.pid;
    // Every call awaits its next() or one shared promise; the first next() answered rejects that promise with an
    // error whose message and stack are control characters (six characters each in JSON), failing all at once.
    const { run } = await attacker(
      pool,
      `{ middleware: [async function hold(turn, next) {
        globalThis.gate ??= new Promise((_, reject) => { globalThis.failAll = reject; });
        await Promise.race([next(turn), globalThis.gate]);
        const long = "\\u0001".repeat(100_000);
        const error = new Error(long);
        error.stack = long;
        globalThis.failAll(error);
        throw error;
      }] }`,
      limits,
    );
    // The first next() is answered once all fourteen have asked for theirs: every call is then in flight.
    let asked = 0;
    let everyoneAsked!: () => void;
    const allInFlight = new Promise<void>((resolve) => (everyoneAsked = resolve));
    const calls = Array.from({ length: 14 }, (_, index) =>
      run.callMiddleware("attack", "hold", turn(), middlewareCtx, async (t) => {
        if (++asked === 14) everyoneAsked();
        if (index > 0) return new Promise<never>(() => {});
        await allInFlight;
        return t;
      }),
    );
    const ended = await Promise.all(calls.map((call) => survives(call, workerBefore)));
    expect(ended).toEqual(Array(14).fill("SCRIPT_ERROR"));
    const errors = await Promise.all(calls.map((call) => call.catch((error: { message: string }) => error.message)));
    expect(errors.some((message) => typeof message === "string" && message.includes("(clipped: the reply had no room for the rest)"))).toBe(
      true,
    );
  });
});
