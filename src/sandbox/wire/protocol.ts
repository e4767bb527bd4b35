import type { SerializedError } from "../../errors.js";
import type { SandboxLimits } from "../api.js";

/*
 * The host <-> sandbox-worker protocol: frames on a dedicated pipe (framing.ts); text fields travel raw.
 *
 * Every message that can make guest code run (load, call, resume) is an "exec message" ("run" means an LLM run only): the worker answers
 * each with exactly one `done` reply, in order. That lets the supervisor watch the head of the line and
 * kill the worker when a reply is overdue. Guest data crosses as JSON text made inside the isolate.
 *
 * A tenant may have several exec messages at the worker at once (callback-gate.ts); the worker still runs
 * them one at a time, in order. Each carries `stops`: how many of the tenant's stops on this worker the host
 * had seen when it sent it, a stop being a reply that reports a bound breach or more than PIPELINE_SEGMENT_MS
 * of guest CPU. A message sent before the host saw the tenant's latest stop is refused, unstarted
 * (`done.refused`): nothing queued behind a breach runs before the host has moved the tenant, and behind a long
 * segment a co-tenant's message waits for that one segment, not for every message the tenant had in flight.
 */

/**
 * A tenant pipelines only while its last message used at most this much guest CPU (its reply's `cpuMs`), and a
 * message that used more is a stop (above). CPU, not wall time: a loaded machine stretches the wall time of
 * every message alike. Shared: the host and the worker count stops by the same rule.
 */
export const PIPELINE_SEGMENT_MS = 5;

/** Whether a reply is one of its tenant's stops (see above): what both sides count, from the same fields. */
export function isStop(done: { breach?: unknown; cpuMs?: number }): boolean {
  return done.breach !== undefined || (done.cpuMs ?? 0) > PIPELINE_SEGMENT_MS;
}

/** What every exec message carries. */
interface ExecFields {
  seq: number;
  tenant: string;
  /** The tenant's stops on this worker (breaches and long segments) the host had seen (absent: none). */
  stops?: number;
}

export type CallKind = "middleware" | "tool" | "hook";

/** Limits the worker enforces, plus the payload caps the in-isolate runtime applies. */
export interface WorkerLimits extends SandboxLimits {
  maxPayloadBytes: number;
  maxLogChars: number;
  logsPerSecond: number;
}

export interface BundleMessage {
  type: "bundle";
  hash: string;
  code: string;
  filename: string;
}

export interface LoadMessage extends ExecFields {
  type: "load";
  /** Sent only when it differs from the last limits this worker got for the tenant (they rarely change). */
  limits?: WorkerLimits;
  bundleHash: string;
}

export interface CallMessage extends ExecFields {
  type: "call";
  /** As for LoadMessage: only when changed. */
  limits?: WorkerLimits;
  runId: string;
  script: string;
  bundleHash: string;
  callId: number;
  kind: CallKind;
  target: string;
  /** JSON text of the argument list. */
  args: string;
  /** JSON text of a big hook payload's `result`, taken out of `args` (call-args.ts). */
  lazy?: string;
}

export interface ResumeMessage extends ExecFields {
  type: "resume";
  callId: number;
  requestId: number;
  /** Which kind of request this answers (capability requests have their own per-callback bound). */
  op: HostRequestOp;
  ok: boolean;
  /** JSON text: the value, or `{code, message}` when !ok. */
  value: string;
}

/**
 * Reads the coverage counters of a run's script contexts (a bundle instrumented for `hookbox test --coverage`:
 * src/testing/coverage/instrument.ts) and resets each one's decision site. Guest code may run (the runtime reads
 * what the bundle left in its context), so it is an exec message with its own `done` reply.
 */
export interface CoverageMessage extends ExecFields {
  type: "coverage";
  runId: string;
}

export interface CloseRunMessage {
  type: "close-run";
  tenant: string;
  runId: string;
}

export interface DropTenantMessage {
  type: "drop-tenant";
  tenant: string;
}

export type ExecMessage = LoadMessage | CallMessage | ResumeMessage | CoverageMessage;
export type HostMessage = BundleMessage | ExecMessage | CloseRunMessage | DropTenantMessage;

/** What happened to callbacks during one exec message. */
export type CallbackOutcome =
  | {
      type: "settled";
      callId: number;
      value: string;
      /** Put the call's lazy result back under this key (call-args.ts). */ lazyKey?: string;
    }
  | { type: "failed"; callId: number; error: SerializedError }
  | { type: "request"; callId: number; requestId: number; op: HostRequestOp; value: string };

/** What a callback may ask the host while it runs: middleware `next()`, or a ctx capability (JSON request). */
export type HostRequestOp = "next" | "capability";

export interface LogRecord {
  tenant: string;
  runId: string;
  script: string;
  level: "debug" | "info" | "warn" | "error";
  message: string;
}

export interface DoneMessage {
  type: "done";
  seq: number;
  outcomes: CallbackOutcome[];
  logs: LogRecord[];
  /** For load: the raw manifest text from the runtime, or the load error. */
  load?: { ok: true; manifest: string } | { ok: false; error: SerializedError };
  /**
   * For coverage: each of the run's script contexts and the JSON text its runtime made of the counters the
   * instrumented bundle kept (`{"counts": [...], "site": n}`), or "null" when the bundle kept none. Guest data.
   */
  coverage?: { script: string; text: string }[];
  /** Not run: it was sent before the host saw the tenant's latest stop on this worker (nothing else is set). */
  refused?: true;
  /** Set when this message's guest code broke a limit (the supervisor may quarantine the tenant). */
  breach?: "SANDBOX_TIMEOUT" | "SANDBOX_MEMORY";
  /** Guest CPU time this message used, ms (usage accounting; the limits are enforced in the worker). */
  cpuMs?: number;
  /** Tenant isolates the worker holds after this message (the pool's stats and tests read it). */
  isolates?: number;
  /** Time the worker spent on this message (diagnostics). */
  workerMs?: number;
}

/** The worker's first message, and only once: it is up (the watchdog's clock starts). */
export interface ReadyMessage {
  type: "ready";
}

export type WorkerMessage = DoneMessage | ReadyMessage;
