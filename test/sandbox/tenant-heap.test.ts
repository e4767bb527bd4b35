import { spawn } from "node:child_process";
import { join } from "node:path";
import type { Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli.js";
import { encodeFrame, FrameReader } from "../../src/sandbox/wire/framing.js";
import { isStop, type CallMessage, type DoneMessage, type HostMessage, type WorkerLimits } from "../../src/sandbox/wire/protocol.js";

/*
 * A tenant isolate's heap (src/sandbox/worker/tenant-heap.ts): every run's context is made in old space and dies
 * with its run. The real worker, driven over its pipe with V8's `--trace-gc` on, one tenant of a 64 MB limit,
 * its full collections read from the trace. V8 left to itself collected it at 10-14 MB with one run in flight
 * (every ~35 runs) and at ~8 MB past the live size with 60 runs in flight.
 */

const LIMITS: WorkerLimits = { memoryMb: 64, cpuMs: 5000, wallMs: 10_000, maxPayloadBytes: 1048576, maxLogChars: 1024, logsPerSecond: 100 };
const FACTORY = `(function (hookbox) { return { default: hookbox.defineScript({ name: "policy", hooks: {
  beforeToolCall() { return { action: "proceed" }; },
} }) }; })`;

interface Collection {
  line: string;
  /** The heap's size when the collection began and what was left after it, MB. */
  fromMb: number;
  toMb: number;
}

/** The worker, its GC trace, and runs of one tenant (one context each, made by the run's first call). */
function traceWorker() {
  const worker = spawn(process.execPath, ["--no-node-snapshot", "--trace-gc", join(repoRoot, "dist/sandbox-worker.js")], {
    stdio: ["ignore", "pipe", "inherit", "pipe"],
  });
  let trace = "";
  worker.stdout!.on("data", (chunk: Buffer) => (trace += chunk.toString()));
  const pipe = worker.stdio[3] as Socket;
  let killed = false;
  // The test ends the worker with SIGKILL, and its pipe may then be reset: expected. Any other error is the test's.
  pipe.on("error", (error) => {
    if (!killed) throw error;
  });
  let onReply: (reply: DoneMessage) => void = () => {};
  const reader = new FrameReader((reply) => onReply(reply as DoneMessage));
  pipe.on("data", (chunk: Buffer) => reader.push(chunk));
  const nextReply = () => new Promise<DoneMessage>((resolve) => (onReply = resolve));
  const send = (message: HostMessage) => pipe.write(encodeFrame(message));
  const ready = nextReply().then(() => send({ type: "bundle", hash: "policy", code: FACTORY, filename: "policy.js" }));
  let seq = 0;
  /** The tenant's stops this worker reported (a long first segment is one): each message says it saw them. */
  let stops = 0;
  return {
    ready,
    async openRun(runId: string): Promise<void> {
      const call: CallMessage = {
        type: "call",
        seq: ++seq,
        tenant: "busy",
        runId,
        script: "policy",
        bundleHash: "policy",
        callId: seq,
        kind: "hook",
        target: "beforeToolCall",
        args: JSON.stringify([{ phase: "beforeToolCall", call: { id: "c", name: "lookup", args: {} } }]),
        stops,
      };
      if (seq === 1) call.limits = LIMITS;
      const reply = nextReply();
      send(call);
      const done = await reply;
      if (isStop(done)) stops++;
      expect(done.outcomes[0]).toMatchObject({ type: "settled" });
    },
    closeRun: (runId: string) => send({ type: "close-run", tenant: "busy", runId }),
    /** Where the trace is now: collections() reads from there. */
    mark: () => trace.length,
    /** Full collections since `from`, of the tenant's isolate (the worker's own Node heap stays under 8 MB). */
    collections(from: number): Collection[] {
      return trace
        .slice(from)
        .split("\n")
        .flatMap((line) => {
          const sizes = /Mark-Compact(?: \(reduce\))? ([\d.]+) \([\d.]+\) -> ([\d.]+) /.exec(line);
          return sizes === null ? [] : [{ line, fromMb: Number(sizes[1]), toMb: Number(sizes[2]) }];
        })
        .filter((collection) => collection.fromMb >= 8);
    },
    kill: () => {
      killed = true;
      worker.kill("SIGKILL");
    },
  };
}

describe("a tenant isolate's full collections", () => {
  let worker: ReturnType<typeof traceWorker>;
  beforeEach(async () => {
    worker = traceWorker();
    await worker.ready;
  });
  afterEach(() => worker.kill());

  it("with one run in flight, begin at 16 MB (not every ~8 MB of dead contexts)", async () => {
    const from = worker.mark();
    for (let run = 1; run <= 300; run++) {
      await worker.openRun(`run-${run}`);
      worker.closeRun(`run-${run}`);
    }
    const collections = worker.collections(from);
    const lines = collections.map((collection) => collection.line).join("\n");
    // ~70 MB of dead contexts: a few collections, each begun at the floor.
    expect(collections.length, lines).toBeGreaterThanOrEqual(2);
    for (const collection of collections) expect(collection.fromMb, lines).toBeGreaterThanOrEqual(15.5);
  });

  it("with 60 runs in flight, begin at several times the live size (not ~8 MB past it)", async () => {
    const open: string[] = [];
    for (let run = 1; run <= 60; run++) {
      await worker.openRun(`run-${run}`);
      open.push(`run-${run}`);
    }
    const from = worker.mark();
    for (let run = 61; run <= 400; run++) {
      await worker.openRun(`run-${run}`);
      open.push(`run-${run}`);
      worker.closeRun(open.shift()!);
    }
    const collections = worker.collections(from);
    const lines = collections.map((collection) => collection.line).join("\n");
    expect(collections.length, lines).toBeGreaterThanOrEqual(2);
    // 60 contexts live (~15 MB): V8's own rule began each at ~23 MB; a growth of 4 x, capped halfway to 64 MB, ~39.
    for (let index = 1; index < collections.length; index++) {
      const live = collections[index - 1]!.toMb;
      expect(collections[index]!.fromMb, lines).toBeGreaterThanOrEqual(Math.min(3 * live, (live + LIMITS.memoryMb) / 2 - 4));
    }
  });
});
