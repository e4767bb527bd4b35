import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { WorkerProcess } from "../../src/sandbox/worker-process.js";
import type { Launcher } from "../../src/sandbox/wall/launcher.js";
import { REPLY_HOLD_MS, type DoneMessage } from "../../src/sandbox/wire/protocol.js";
import { isHookboxError } from "../../src/errors.js";

/*
 * The host's side of held replies (wire/protocol.ts, "Held replies"; docs/sandbox.md "Pipelining"), through a real
 * WorkerProcess and a stand-in worker: which messages the host lets the worker hold the reply before them for
 * (`batch`), and what its watchdog allows the head of the line for a reply held while the next message runs.
 */

/** Answers each exec message at once with the `batch` it carried, except those of tenants named "stuck...": never. */
const STAND_IN = `
const { Socket } = require("node:net");
const pipe = new Socket({ fd: 3, readable: true, writable: true });
const send = (message) => {
  const text = Buffer.from(JSON.stringify(message));
  const frame = Buffer.alloc(8 + text.length);
  frame.writeUInt32LE(text.length, 0);
  text.copy(frame, 8);
  pipe.write(frame);
};
let buffered = Buffer.alloc(0);
pipe.on("data", (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  while (buffered.length >= 8) {
    const headerBytes = buffered.readUInt32LE(0);
    const total = 8 + headerBytes + buffered.readUInt32LE(4);
    if (buffered.length < total) break;
    const message = JSON.parse(buffered.toString("utf8", 8, 8 + headerBytes));
    buffered = buffered.subarray(total);
    if (message.tenant === undefined || message.tenant.startsWith("stuck")) continue;
    const value = JSON.stringify({ batch: message.batch === true });
    send({ type: "done", seq: message.seq, outcomes: [{ type: "settled", callId: message.callId, value }], logs: [] });
  }
});
pipe.on("end", () => process.exit(0));
pipe.on("error", () => process.exit(0));
send({ type: "ready" });
`;

const launcher: Launcher = {
  wall: "none",
  launch: (request) => spawn(process.execPath, ["-e", STAND_IN], { stdio: request.stdio }),
  launchSync: () => {
    throw new Error("not used");
  },
  nodePid: (child) => child.pid,
  kill: (child) => child.kill("SIGKILL"),
};

const GRACE_MS = 20;
const workers: WorkerProcess[] = [];
afterEach(() => {
  for (const worker of workers.splice(0)) worker.kill({ reason: "closed", detail: "test over" });
});

function standIn(): WorkerProcess {
  const worker = new WorkerProcess({
    path: "stand-in",
    launcher,
    role: "normal",
    graceMs: GRACE_MS,
    bootLimitMs: 10_000,
    maxFrameBytes: 1 << 20,
    memoryLimitBytes: 1 << 40,
    memorySampleMs: 1000,
    onMemorySample: () => {},
    memoryBytes: 1 << 30,
    onExit: () => {},
  });
  workers.push(worker);
  return worker;
}

let callId = 0;
function call(tenant: string): Parameters<WorkerProcess["exec"]>[0] {
  return {
    type: "call",
    tenant,
    runId: "run",
    script: "policy",
    bundleHash: "bundle",
    callId: ++callId,
    kind: "hook",
    target: "beforeToolCall",
    args: "[]",
  };
}

const batchOf = (done: DoneMessage): boolean => {
  const outcome = done.outcomes[0];
  return outcome?.type === "settled" && (JSON.parse(outcome.value) as { batch: boolean }).batch;
};

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string; ms: number }> {
  const started = performance.now();
  try {
    await promise;
  } catch (error) {
    if (!isHookboxError(error)) throw error;
    return { code: error.code, message: error.message, ms: performance.now() - started };
  }
  throw new Error("expected a failure");
}

describe("held replies, the host's side", () => {
  it("a message lets the reply before it wait only behind the same tenant's message with a budget at least its own", async () => {
    const worker = standIn();
    const replies = [
      worker.exec(call("a"), 100), // nothing in flight before it
      worker.exec(call("a"), 100), // the same tenant, the same budget
      worker.exec(call("b"), 100), // another tenant's message before it
      worker.exec(call("b"), 200), // a budget larger than the one before it
      worker.exec(call("b"), 50), // the same tenant, a smaller budget
    ];
    expect((await Promise.all(replies)).map(batchOf)).toEqual([false, true, false, false, true]);
    // Once the line is empty, a message follows nothing.
    expect(batchOf(await worker.exec(call("b"), 50))).toBe(false);
  });

  it("the watchdog gives the head REPLY_HOLD_MS more when the reply may wait for the next message, and says so", async () => {
    const worker = standIn();
    await worker.exec(call("a"), 100); // the worker is ready: the head's clock starts when the message is sent
    const held = failure(worker.exec(call("stuck"), 50));
    const behind = worker.exec(call("stuck"), 50);
    behind.catch(() => {});
    const error = await held;
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    expect(error.message).toContain(`no reply within 50 ms + ${GRACE_MS} ms grace + ${REPLY_HOLD_MS} ms for a reply held`);
    expect(error.ms).toBeGreaterThanOrEqual(50 + GRACE_MS + REPLY_HOLD_MS);
  });

  it("without a message of its tenant behind it, the head gets its budget and the grace only", async () => {
    const worker = standIn();
    await worker.exec(call("a"), 100);
    const alone = failure(worker.exec(call("stuck"), 50));
    worker.exec(call("stuck-too"), 50).catch(() => {});
    const error = await alone;
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    expect(error.message).toContain(`no reply within 50 ms + ${GRACE_MS} ms grace)`);
  });
});
