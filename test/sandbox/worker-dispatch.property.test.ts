import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { WorkerProcess } from "../../src/sandbox/worker-process.js";
import { checkWorkerMessage } from "../../src/sandbox/worker-messages.js";
import { encodeFrame, FrameReader } from "../../src/sandbox/wire/framing.js";
import type { Launcher } from "../../src/sandbox/wall/launcher.js";
import type { DoneMessage } from "../../src/sandbox/wire/protocol.js";
import { isHookboxError } from "../../src/errors.js";
import { propertyParameters } from "../helpers/property.js";

/*
 * The host's handling of whatever a worker writes back, end to end through a real WorkerProcess: a stand-in
 * worker answers the host's first message with the bytes fast-check picked (frames in or out of protocol
 * order, broken ones, junk). Whatever they are, the call settles (no hang: the boot limit, the watchdog or
 * the breach ends it), the host never throws, and it ends exactly as the protocol says (`expected`): a call
 * succeeds only on a `done` the protocol allows, for its own seq, right after `ready`; otherwise it fails closed.
 */

const RELAY = `
const { Socket } = require("node:net");
const pipe = new Socket({ fd: 3, readable: true, writable: true });
const bytes = Buffer.from(process.argv[1], "base64");
let sent = false;
pipe.on("data", () => { if (!sent) { sent = true; pipe.write(bytes); } });
pipe.on("end", () => process.exit(0));
pipe.on("error", () => process.exit(0));
`;

function relayLauncher(bytes: Buffer): Launcher {
  return {
    wall: "none",
    launch: (request) => spawn(process.execPath, ["-e", RELAY, bytes.toString("base64")], { stdio: request.stdio }),
    launchSync: () => {
      throw new Error("not used");
    },
    nodePid: (child) => child.pid,
    kill: (child) => child.kill("SIGKILL"),
  };
}

const BUDGET_MS = 100;
const MAX_FRAME = 1 << 20;
const callId = fc.oneof(fc.constant(1), fc.nat(3));
const text = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ minLength: 2048, maxLength: 3000 }));
const error = fc.record({
  code: fc.constantFrom("SCRIPT_ERROR", "HOOK_CONTRACT", "SANDBOX_TIMEOUT", "CANCELLED", "TOOL_ERROR", ""),
  message: fc.oneof(fc.string({ maxLength: 20 }), fc.string({ minLength: 5000, maxLength: 6000 })),
  details: fc.option(
    fc.dictionary(fc.constantFrom("stack", "path", "errorCode", "script", "limit", "other"), fc.jsonValue({ maxDepth: 1 })),
    {
      nil: undefined,
    },
  ),
});
const outcome = fc.oneof(
  fc.record({ type: fc.constant("settled"), callId, value: text }),
  fc.record({ type: fc.constant("failed"), callId, error }),
  fc.record({
    type: fc.constant("request"),
    callId,
    requestId: fc.nat(3),
    op: fc.constantFrom("next", "capability", "other"),
    value: text,
  }),
  fc.jsonValue({ maxDepth: 2 }),
);
const done = fc.record(
  {
    type: fc.constant("done"),
    seq: fc.oneof(fc.constant(1), fc.integer({ min: -1, max: 3 })),
    outcomes: fc.array(outcome, { maxLength: 3 }),
    logs: fc.array(
      fc.record({
        tenant: fc.string(),
        runId: fc.string(),
        script: fc.string(),
        level: fc.constantFrom("info", "loud"),
        message: fc.string(),
      }),
      {
        maxLength: 2,
      },
    ),
    breach: fc.constantFrom("SANDBOX_TIMEOUT", "SANDBOX_MEMORY", "OTHER"),
    cpuMs: fc.oneof(fc.nat(), fc.constant(-1)),
  },
  { requiredKeys: ["type", "seq", "outcomes", "logs"] },
);
/** A frame of any JSON header (no blobs): the shape a worker taken over may send, which encodeFrame is not for. */
function rawFrame(message: unknown): Buffer {
  const header = Buffer.from(JSON.stringify(message));
  const frame = Buffer.alloc(8 + header.length);
  frame.writeUInt32LE(header.length, 0);
  header.copy(frame, 8);
  return frame;
}

const frame = fc.oneof(
  fc.constant({ type: "ready" }).map((message) => encodeFrame(message)),
  done.map((message) => rawFrame(message)),
  done
    .filter((message) => message.outcomes.every((each) => each !== null && typeof each === "object"))
    .map((message) => encodeFrame(message)),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }).map((message) => rawFrame(message)),
  fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
);
/** Whole frames in any order, some with a byte changed or cut short. */
const written = fc
  .tuple(fc.array(frame, { maxLength: 5 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 2 }), fc.nat())
  .map(([frames, flips, cut]) => {
    const bytes = Buffer.concat(frames);
    for (const [at, value] of flips) if (bytes.length > 0) bytes[at % bytes.length] = value;
    return cut % 4 === 0 ? bytes.subarray(0, cut % (bytes.length + 1)) : bytes;
  });

/** A reply the protocol allows, after ready, sometimes followed by more (which may break it: too late for this call). */
const wellFormed = fc
  .tuple(fc.array(fc.record({ type: fc.constant("settled"), callId: fc.constant(1), value: text }), { maxLength: 2 }), written)
  .map(([outcomes, more]) =>
    Buffer.concat([encodeFrame({ type: "ready" }), encodeFrame({ type: "done", seq: 1, outcomes, logs: [] }), more]),
  );

/**
 * What the protocol says of `bytes` as the answer to the first message: the frames as the decoder reads them
 * (itself tested in framing.property.test.ts), then `ready` first, and the reply to seq 1 second; anything
 * else is a breach (SANDBOX_CRASHED), no ready at all is the boot limit (SANDBOX_CRASHED), and a ready
 * with nothing after it is the watchdog (SANDBOX_TIMEOUT).
 */
function expected(bytes: Buffer): "ok" | "SANDBOX_CRASHED" | "SANDBOX_TIMEOUT" {
  const messages: unknown[] = [];
  let broken = false;
  const reader = new FrameReader((message) => messages.push(message), { maxFrameBytes: MAX_FRAME, onViolation: () => (broken = true) });
  reader.push(bytes);
  const [first, second] = messages.map((message) => checkWorkerMessage(message));
  if (first === undefined || !first.ok || first.message.type !== "ready") return "SANDBOX_CRASHED";
  if (second === undefined) return broken ? "SANDBOX_CRASHED" : "SANDBOX_TIMEOUT";
  return second.ok && second.message.type === "done" && second.message.seq === 1 ? "ok" : "SANDBOX_CRASHED";
}

/**
 * One call through a fresh WorkerProcess whose worker answers with `bytes`: how it settled. The boot limit covers
 * starting a Node process, which a loaded machine can take over a second to do; a case whose bytes hold no frame
 * waits all of it.
 */
async function callThrough(
  bytes: Buffer,
  bootLimitMs = 3000,
): Promise<{ ok: true; done: DoneMessage } | { ok: false; code: string; message: string }> {
  let exited!: () => void;
  const gone = new Promise<void>((resolve) => (exited = resolve));
  const worker = new WorkerProcess({
    path: "/unused/worker.js",
    launcher: relayLauncher(bytes),
    role: "normal",
    graceMs: 100,
    bootLimitMs,
    maxFrameBytes: MAX_FRAME,
    memoryLimitBytes: 2 ** 40,
    memorySampleMs: 1000,
    onMemorySample: () => undefined,
    memoryBytes: 2 ** 40,
    onExit: () => exited(),
  });
  const body = {
    type: "call" as const,
    tenant: "t",
    runId: "r",
    script: "s",
    bundleHash: "h",
    callId: 1,
    kind: "hook" as const,
    target: "beforeToolCall",
    args: "[]",
  };
  try {
    return { ok: true, done: await worker.exec(body, BUDGET_MS) };
  } catch (thrown) {
    expect(isHookboxError(thrown), String(thrown)).toBe(true);
    const failure = thrown as { code: string; message: string };
    return { ok: false, code: failure.code, message: failure.message };
  } finally {
    worker.kill({ reason: "closed", detail: "the case is over" });
    await gone;
  }
}

describe("the host's dispatch of a worker's frames (property)", () => {
  it("any bytes a worker writes back: the call settles, the host never throws, only a well-ordered valid reply succeeds", async () => {
    const parameters = propertyParameters<[Buffer]>(25);
    // Each case starts a process: a fuzz run's count is capped here.
    parameters.numRuns = Math.min(parameters.numRuns ?? 25, 2000);
    // The orders that matter, every time (random sequences find them only now and then).
    const ready = encodeFrame({ type: "ready" });
    const reply = (seq: number) => encodeFrame({ type: "done", seq, outcomes: [{ type: "settled", callId: 1, value: "" }], logs: [] });
    parameters.examples = [
      [ready, ready, reply(1)],
      [reply(1)],
      [reply(1), ready],
      [ready, reply(2)],
      [ready, reply(1), reply(1)],
      [ready],
    ].map((frames) => [Buffer.concat(frames)] as [Buffer]);
    let succeeded = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(written, wellFormed), async (bytes) => {
        const settled = await callThrough(bytes);
        expect(settled.ok ? "ok" : settled.code).toBe(expected(bytes));
        if (settled.ok) {
          succeeded++;
          expect(checkWorkerMessage(settled.done).ok).toBe(true);
          expect(settled.done.seq).toBe(1);
        } else {
          expect(settled.message.length).toBeLessThan(1000);
        }
      }),
      parameters,
    );
    expect(succeeded, "some cases were valid replies").toBeGreaterThan(0);
  }, 600_000);

  it("a worker that never says ready fails its call within the boot limit", async () => {
    const started = performance.now();
    const settled = await callThrough(Buffer.alloc(0), 1000);
    expect(settled).toMatchObject({ ok: false, code: "SANDBOX_CRASHED" });
    expect((settled as { message: string }).message).toContain("did not say it was ready within 1000 ms");
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
