/*
 * Sandbox worker process entry (dist/sandbox-worker.js), forked by the supervisor with
 * `--no-node-snapshot`. It owns isolates and may call into them synchronously: this is not the host's
 * main thread. Each exec message gets exactly one `done` reply, in order (see wire/protocol.ts).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Socket } from "node:net";
import { Script } from "node:vm";
import { encodeFrame, FrameReader, readAvailable, writeFrame } from "../wire/framing.js";
import {
  isStop,
  type CallMessage,
  type CoverageMessage,
  type DoneMessage,
  type HostMessage,
  type LoadMessage,
  type ResumeMessage,
  type WorkerLimits,
} from "../wire/protocol.js";
import { CodeCache } from "./code-cache.js";
import { runSegment, type Breach } from "./executor.js";
import { clipText, Failure, isTimeoutError, messageOf } from "./failure.js";
import { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_STACK_CHARS } from "../wire/error-limits.js";
import { createGuestOpHandler, type Collector, type WorkerCall } from "./guest-op-handler.js";
import { LogLimiter } from "./log-limiter.js";
import { watchParent } from "./parent-watch.js";
import { ScriptContext } from "./script-context.js";
import type { RuntimeOpCall } from "../wire/guest-ops.js";
import { PollPolicy } from "../wire/poll-policy.js";
import { TenantIsolate } from "./tenant-isolate.js";
import { IsolateReserve } from "./isolate-reserve.js";
import { makeRuntimeSnapshot, RUNTIME_FILENAME, TAKE_INSTALL_SOURCE } from "./runtime-snapshot.js";
import { closeInheritedFds } from "../wall/inherited-fds.js";
import { configureTenantHeaps } from "./tenant-heap.js";

// Before anything else: descriptors the host holds without close-on-exec must not stay open in here.
closeInheritedFds();

const RUNTIME_HASH = "hookbox-runtime";
const code = new CodeCache();
// Every isolate is made from a snapshot with the runtime evaluated; each new context takes `install` from it.
code.add(RUNTIME_HASH, TAKE_INSTALL_SOURCE, RUNTIME_FILENAME);

/** dist/runtime.js, checked to be complete (a concurrent rebuild may be rewriting it: retry briefly). */
function readRuntime(): string {
  const path = join(dirname(fileURLToPath(import.meta.url)), "runtime.js");
  for (let attempt = 0; ; attempt++) {
    const runtime = readFileSync(path, "utf8");
    try {
      new Script(runtime);
      return runtime;
    } catch (error) {
      if (attempt >= 40) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
}

const tenants = new Map<string, TenantIsolate>();
// Before the first isolate is made: V8 reads its heap flags when it makes one.
configureTenantHeaps();
const isolates = new IsolateReserve({ snapshot: makeRuntimeSnapshot(readRuntime()) });
/** Each tenant's limits, as last sent by the host (it sends them only when they change). */
const tenantLimits = new Map<string, WorkerLimits>();
const calls = new Map<number, WorkerCall>();
const limiters = new Map<string, LogLimiter>();
/** Stops (breaches, long segments) reported per tenant: a message sent before the host saw the latest one is refused (wire/protocol.ts). */
const stops = new Map<string, number>();
let collector: Collector | undefined;

function limitsFor(message: LoadMessage | CallMessage): WorkerLimits {
  if (message.limits !== undefined) tenantLimits.set(message.tenant, message.limits);
  const limits = tenantLimits.get(message.tenant);
  if (limits === undefined) throw new Failure("SANDBOX_CRASHED", `no limits are known for tenant ${message.tenant}`);
  return limits;
}

function tenantFor(name: string, limits: WorkerLimits): TenantIsolate {
  let tenant = tenants.get(name);
  if (tenant === undefined) {
    tenant = new TenantIsolate(name, { code, runtimeHash: RUNTIME_HASH, isolates });
    tenants.set(name, tenant);
  }
  tenant.prepare(limits);
  return tenant;
}

/** One log budget per tenant, shared by all its contexts. */
function limiterFor(name: string, limits: WorkerLimits): LogLimiter {
  let limiter = limiters.get(name);
  if (limiter === undefined) limiters.set(name, (limiter = new LogLimiter(limits.logsPerSecond)));
  return limiter;
}

function newContext(tenant: TenantIsolate, runId: string, script: string, bundleHash: string, limits: WorkerLimits): ScriptContext {
  return ScriptContext.create({
    tenant,
    runId,
    script,
    bundleHash,
    limits,
    channel: (self) =>
      createGuestOpHandler(
        {
          calls,
          collector: () => collector,
          limiter: limiterFor(tenant.name, limits),
          maxLogChars: limits.maxLogChars,
        },
        self,
      ),
  });
}

function handleLoad(message: LoadMessage, reply: DoneMessage): void {
  const limits = limitsFor(message);
  const tenant = tenantFor(message.tenant, limits);
  let context: ScriptContext | undefined;
  try {
    context = newContext(tenant, "", "", message.bundleHash, limits);
    const registration = JSON.parse(context.registration) as {
      ok: boolean;
      manifest?: unknown;
      error?: { code?: string; message?: string; stack?: string };
    };
    if (registration.ok) reply.load = { ok: true, manifest: JSON.stringify(registration.manifest) };
    else {
      const error = registration.error ?? {};
      reply.load = {
        ok: false,
        error: {
          code: "SCRIPT_LOAD",
          message: clipText(String(error.message ?? "failed to load"), MAX_ERROR_MESSAGE_CHARS),
          details: typeof error.stack === "string" ? { stack: clipText(error.stack, MAX_ERROR_STACK_CHARS) } : {},
        },
      };
    }
  } catch (error) {
    const failure = error instanceof Failure ? error : new Failure("SCRIPT_LOAD", messageOf(error));
    reply.load = { ok: false, error: failure.serialize() };
    if (failure.code === "SANDBOX_TIMEOUT" || failure.code === "SANDBOX_MEMORY") reply.breach = failure.code;
  } finally {
    context?.release();
  }
}

function contextFor(message: CallMessage, limits: WorkerLimits): ScriptContext {
  const tenant = tenantFor(message.tenant, limits);
  let contexts = tenant.runs.get(message.runId) as Map<string, ScriptContext> | undefined;
  if (contexts === undefined) tenant.runs.set(message.runId, (contexts = new Map()));
  let context = contexts.get(message.script);
  if (context === undefined) {
    context = newContext(tenant, message.runId, message.script, message.bundleHash, limits);
    const registration = JSON.parse(context.registration) as { ok: boolean; error?: { message?: string } };
    if (!registration.ok) {
      context.release();
      throw new Failure(
        "SCRIPT_ERROR",
        `${message.script}: evaluating the script failed: ${registration.error?.message ?? "unknown error"}`,
        { script: message.script },
      );
    }
    contexts.set(message.script, context);
  }
  return context;
}

function handleCall(message: CallMessage, reply: DoneMessage, sink: Collector): Breach {
  let context: ScriptContext;
  let limits: WorkerLimits;
  try {
    limits = limitsFor(message);
    context = contextFor(message, limits);
  } catch (error) {
    const failure = error instanceof Failure ? error : new Failure("SANDBOX_CRASHED", messageOf(error));
    sink.outcomes.push({ type: "failed", callId: message.callId, error: failure.serialize() });
    return failure.code === "SANDBOX_TIMEOUT" || failure.code === "SANDBOX_MEMORY" ? failure.code : undefined;
  }
  const call: WorkerCall = {
    callId: message.callId,
    context,
    kind: message.kind,
    target: message.target,
    cpuMs: 0,
    wallMs: 0,
    cpuLimitMs: limits.cpuMs,
    wallLimitMs: limits.wallMs,
    maxPayloadBytes: limits.maxPayloadBytes,
    pendingRequests: 0,
    pendingCapabilities: 0,
    nextRequested: false,
    finished: false,
  };
  calls.set(call.callId, call);
  void reply;
  return runSegment(call, ["call", call.callId, message.kind, message.target, message.args, message.lazy], sink, calls);
}

function handleResume(message: ResumeMessage, sink: Collector): Breach {
  const call = calls.get(message.callId);
  if (call === undefined || call.finished) return undefined; // failed meanwhile; nothing to resume
  if (call.pendingRequests > 0) call.pendingRequests--;
  if (message.op === "capability" && call.pendingCapabilities > 0) call.pendingCapabilities--;
  return runSegment(call, ["resume", call.callId, message.requestId, message.ok, message.value], sink, calls);
}

/** The coverage counters of each of the run's contexts (instrumented bundles only: others answer "null"). */
function handleCoverage(message: CoverageMessage, reply: DoneMessage): Breach {
  const tenant = tenants.get(message.tenant);
  const contexts = tenant?.runs.get(message.runId) as Map<string, ScriptContext> | undefined;
  const limits = tenantLimits.get(message.tenant);
  reply.coverage = [];
  if (tenant === undefined || contexts === undefined || limits === undefined) return undefined;
  const timeout = Math.max(1, Math.min(limits.cpuMs, limits.wallMs));
  for (const [script, context] of contexts) {
    try {
      const text = context.dispatcher.applySync(undefined, ["coverage"] satisfies RuntimeOpCall, { timeout });
      reply.coverage.push({ script, text: typeof text === "string" ? text : "null" });
    } catch (error) {
      if (tenant.isolateLost()) {
        tenant.memoryFailure(`${script}: reading coverage`);
        return "SANDBOX_MEMORY";
      }
      reply.coverage.push({ script, text: "null" });
      if (isTimeoutError(error)) return "SANDBOX_TIMEOUT";
    }
  }
  return undefined;
}

function onMessage(message: HostMessage): void {
  switch (message.type) {
    case "bundle":
      code.add(message.hash, message.code, message.filename);
      return;
    case "close-run":
      tenants.get(message.tenant)?.closeRun(message.runId);
      return;
    case "drop-tenant":
      tenants.get(message.tenant)?.dispose();
      tenants.delete(message.tenant);
      tenantLimits.delete(message.tenant);
      limiters.delete(message.tenant);
      stops.delete(message.tenant);
      return;
  }
  if ((message.stops ?? 0) < (stops.get(message.tenant) ?? 0)) {
    // Sent behind a stop the host had not seen yet: it decides again where and when this runs, if at all.
    writeFrame(pipe, encodeFrame({ type: "done", seq: message.seq, outcomes: [], logs: [], refused: true } satisfies DoneMessage));
    return;
  }
  const startedAt = performance.now();
  const sink: Collector = { outcomes: [], logs: [] };
  const reply: DoneMessage = { type: "done", seq: message.seq, outcomes: [], logs: [] };
  collector = sink;
  try {
    if (message.type === "load") handleLoad(message, reply);
    else if (message.type === "call") reply.breach = handleCall(message, reply, sink);
    else if (message.type === "coverage") reply.breach = handleCoverage(message, reply);
    else reply.breach = handleResume(message, sink);
  } catch (error) {
    // A bug of ours must not hang the host: fail whatever this message was about.
    const serialized = { code: "SANDBOX_CRASHED", message: `sandbox worker error: ${messageOf(error)}` };
    if (message.type === "load") reply.load = { ok: false, error: serialized };
    else if (message.type === "coverage") reply.coverage = [];
    else sink.outcomes.push({ type: "failed", callId: message.callId, error: serialized });
  } finally {
    collector = undefined;
  }
  reply.outcomes = sink.outcomes;
  reply.logs = sink.logs;
  if (sink.cpuMs !== undefined) reply.cpuMs = sink.cpuMs;
  reply.isolates = tenants.size;
  reply.workerMs = performance.now() - startedAt;
  if (isStop(reply)) stops.set(message.tenant, (stops.get(message.tenant) ?? 0) + 1);
  writeFrame(pipe, encodeFrame(reply));
}

/*
 * After answering, poll the pipe for a short while before going back to the event loop: a host making
 * sequential calls sends the next one within tens of microseconds, and catching it here saves the
 * worker's wake-up (epoll + scheduler) on the critical path. Bounded, only after a message, and only while
 * polling pays off (wire/poll-policy.ts): an idle worker sleeps in the event loop and burns no CPU. (The
 * host does its part while a reply is due: reply-wait.ts.)
 */
const messagePolling = new PollPolicy(Number(process.env.HOOKBOX_WORKER_POLL_US ?? 200) / 1000);
/** Longest stretch spent away from the event loop while messages keep arriving (its other events wait). */
const POLL_MAX_MS = 20;
/** Reused: the reader copies what it keeps of a chunk (wire/framing.ts), so nothing refers to it after push(). */
const pollBuffer = Buffer.allocUnsafe(256 * 1024);
function pollForMore(): void {
  let window = messagePolling.beginWait();
  if (window <= 0) return;
  const startedAt = performance.now();
  let deadline = startedAt + window;
  for (let now = startedAt; now - startedAt < POLL_MAX_MS; now = performance.now()) {
    // Read once more after the deadline: a poll that missed is one whose message was not there at its end.
    const over = now >= deadline;
    // The pipe's fd is non-blocking (libuv opened it); the end of the stream and errors are the socket's to report.
    const bytes = readAvailable(PIPE_FD, pollBuffer);
    if (bytes < 0) return;
    if (bytes === 0) {
      if (!over) continue;
      messagePolling.lapsed();
      return;
    }
    messagePolling.caught();
    reader.push(pollBuffer.subarray(0, bytes));
    // The message was answered in place: a new wait begins.
    window = messagePolling.beginWait();
    if (window <= 0) return;
    deadline = performance.now() + window;
  }
}

// Protocol frames on fd 3 (wire/framing.ts): the only channel to the host; its end means the host is gone.
const PIPE_FD = 3;
const pipe = new Socket({ fd: PIPE_FD, readable: true, writable: true });
const reader = new FrameReader((message) => onMessage(message as HostMessage));
pipe.on("data", (chunk: Buffer) => {
  reader.push(chunk);
  pollForMore();
});
// The host closed its end (or died): nothing can be answered any more.
pipe.on("end", () => process.kill(process.pid, "SIGKILL"));
pipe.on("error", () => process.kill(process.pid, "SIGKILL"));
watchParent();
writeFrame(pipe, encodeFrame({ type: "ready" }));
