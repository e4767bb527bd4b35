import type { CallbackOutcome, LogRecord } from "../wire/protocol.js";
import type { DecodedSettlement, GuestLogLevel, GuestOpHandler, GuestOps } from "../wire/guest-ops.js";
import type { LogLimiter } from "./log-limiter.js";
import { clipText } from "./failure.js";
import {
  MAX_ERROR_CODE_CHARS,
  MAX_ERROR_DESCRIPTION_CHARS,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_ERROR_NAME_CHARS,
  MAX_ERROR_STACK_CHARS,
} from "../wire/error-limits.js";
import type { ScriptContext } from "./script-context.js";

/** What guest code reported during the current exec message. */
export interface Collector {
  outcomes: CallbackOutcome[];
  logs: LogRecord[];
  /** Guest CPU time the message's segments used, ms (the host charges it to the run). */
  cpuMs?: number;
  /** UTF-8 bytes of the settled values and requests in the reply so far (`replyBudgetBytes`). */
  payloadBytes?: number;
  /** UTF-8 bytes of the log lines in the reply so far (`REPLY_LOG_BYTES`). */
  logBytes?: number;
}

/*
 * Each text a script sends out is bounded by itself, in characters, but one segment may send many (sixteen
 * capability requests, a hundred log lines) and a character is up to three bytes of UTF-8; the host answers a
 * reply frame over its cap (4 x maxPayloadBytes + 1 MiB, src/sandbox/pool.ts) by killing the worker with every
 * co-tenant's call. So one reply carries at most `replyBudgetBytes` of values and requests and `REPLY_LOG_BYTES`
 * of log lines, which leaves the rest of the cap to what the worker adds (clipped errors, names, framing).
 */
export function replyBudgetBytes(maxPayloadBytes: number): number {
  return 3 * maxPayloadBytes + 128 * 1024;
}
export const REPLY_LOG_BYTES = 384 * 1024;

/** Charges `text` to one of the reply's budgets; false, charging nothing, when it does not fit. */
function charge(collector: Collector, budget: "payloadBytes" | "logBytes", text: string, limit: number): boolean {
  const used = collector[budget] ?? 0;
  const bytes = Buffer.byteLength(text);
  if (used + bytes > limit) return false;
  collector[budget] = used + bytes;
  return true;
}

/** Fails `call` in the middle of its segment: what it sent in this reply is dropped, later settles are ignored. */
function failCall(
  collector: Collector,
  calls: Map<number, WorkerCall>,
  call: WorkerCall,
  code: "PAYLOAD_TOO_LARGE",
  message: string,
): void {
  call.finished = true;
  calls.delete(call.callId);
  collector.outcomes = collector.outcomes.filter((outcome) => outcome.callId !== call.callId);
  collector.outcomes.push({
    type: "failed",
    callId: call.callId,
    error: { code, message: `${call.context.script}: ${call.kind} ${call.target} ${message}`, details: { script: call.context.script } },
  });
}

/** A callback the worker is running (or that awaits the host), as the worker tracks it. */
export interface WorkerCall {
  callId: number;
  context: ScriptContext;
  kind: string;
  target: string;
  cpuMs: number;
  wallMs: number;
  cpuLimitMs: number;
  wallLimitMs: number;
  maxPayloadBytes: number;
  /** Host requests sent and not yet answered (next() and capability requests). */
  pendingRequests: number;
  /** Of those, capability requests (bounded per callback). */
  pendingCapabilities: number;
  /** next() may be asked once per middleware call. */
  nextRequested: boolean;
  finished: boolean;
}

/** Capability requests one callback may have in flight (the runtime refuses more before asking). */
export const MAX_PENDING_CAPABILITIES = 16;

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

const LEVELS = new Set<unknown>(["debug", "info", "warn", "error"] satisfies GuestLogLevel[]);

type Settle = GuestOps["settle"];
type Request = GuestOps["request"];
type Log = GuestOps["log"];

interface ChannelDeps {
  calls: Map<number, WorkerCall>;
  collector: () => Collector | undefined;
  /** The log budget of the tenant this channel's context belongs to. */
  limiter: LogLimiter;
  maxLogChars: number;
}

/** Parses the runtime's error description; a forged or broken one still yields a clean SCRIPT_ERROR. */
function errorFromGuest(text: string, call: WorkerCall) {
  let parsed: { code?: unknown; name?: unknown; message?: unknown; stack?: unknown; path?: unknown; errorCode?: unknown } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // fall through with defaults
  }
  const code = parsed.code === "HOOK_CONTRACT" || parsed.code === "PAYLOAD_TOO_LARGE" ? parsed.code : "SCRIPT_ERROR";
  const thrownCode =
    typeof parsed.errorCode === "string" && parsed.errorCode.length <= MAX_ERROR_CODE_CHARS && /^[A-Z][A-Z0-9_]*$/.test(parsed.errorCode)
      ? parsed.errorCode
      : undefined;
  const message = typeof parsed.message === "string" ? clipText(parsed.message, MAX_ERROR_MESSAGE_CHARS) : "failed";
  const details: Record<string, unknown> = { script: call.context.script, kind: call.kind, target: call.target };
  if (typeof parsed.stack === "string") details.stack = clipText(parsed.stack, MAX_ERROR_STACK_CHARS);
  if (typeof parsed.path === "string") details.path = clipText(parsed.path, MAX_ERROR_MESSAGE_CHARS);
  if (thrownCode) {
    details.errorCode = thrownCode;
    // With the code, the host can tell a rethrown next() error from one the script made (middleware-chain.ts).
    details.thrownMessage = message;
  }
  const name = clipText(
    (typeof parsed.name === "string" ? parsed.name : "Error") + (thrownCode ? ` [${thrownCode}]` : ""),
    MAX_ERROR_NAME_CHARS,
  );
  return { code, message: code === "SCRIPT_ERROR" ? `${name}: ${message}` : message, details };
}

/**
 * A callback settled (through the host channel, or as its start's return value): record the outcome.
 * `lazyKey` (untrusted, checked): the property holding the call's lazy result, left out of `text` for the
 * host to put back.
 */
export function settleCall(
  collector: Collector,
  calls: Map<number, WorkerCall>,
  call: WorkerCall,
  ok: Settle[1],
  text: Settle[2],
  /** Untrusted: whatever guest code passed where the runtime passes `Settle[3]`. */
  lazyKey: unknown,
): void {
  call.finished = true;
  calls.delete(call.callId);
  // A request made by a callback that then settled (in this segment) is never answered.
  if (call.pendingRequests > 0) collector.outcomes = collector.outcomes.filter((outcome) => outcome.callId !== call.callId);
  if (ok && text.length <= call.maxPayloadBytes && !charge(collector, "payloadBytes", text, replyBudgetBytes(call.maxPayloadBytes)))
    collector.outcomes.push({
      type: "failed",
      callId: call.callId,
      error: {
        code: "PAYLOAD_TOO_LARGE",
        message: `returned ${Buffer.byteLength(text)} bytes, more than the ${replyBudgetBytes(call.maxPayloadBytes)} bytes one reply has room for with what the script sent before it`,
        details: { path: "$" },
      },
    });
  else if (ok && text.length <= call.maxPayloadBytes) {
    const outcome: CallbackOutcome = { type: "settled", callId: call.callId, value: text };
    if (typeof lazyKey === "string" && lazyKey.length <= 1024) outcome.lazyKey = lazyKey;
    collector.outcomes.push(outcome);
  } else if (ok)
    collector.outcomes.push({
      type: "failed",
      callId: call.callId,
      error: {
        code: "PAYLOAD_TOO_LARGE",
        message: `returned ${text.length} bytes, over the sandbox's maxPayloadBytes of ${call.maxPayloadBytes}`,
        details: { path: "$" },
      },
    });
  else
    collector.outcomes.push({
      type: "failed",
      callId: call.callId,
      error: withinReply(collector, call, errorFromGuest(text.slice(0, MAX_ERROR_DESCRIPTION_CHARS), call)),
    });
}

/** What is kept of an error the reply has no room for: its code and the start of its message, never its stack. */
const SHORT_ERROR_MESSAGE_CHARS = 256;

/**
 * A script's error, charged to the reply's budget as the values and requests are: one clipped error is up to
 * ~125 KB of JSON (control characters are six characters each), and a segment can fail every callback of its
 * context at once (all awaiting one promise the script rejects). One the reply has no room for goes out short,
 * uncharged: a few hundred bytes for each callback the host has in flight, well inside the cap's headroom.
 */
function withinReply(collector: Collector, call: WorkerCall, error: ReturnType<typeof errorFromGuest>): ReturnType<typeof errorFromGuest> {
  if (charge(collector, "payloadBytes", JSON.stringify(error), replyBudgetBytes(call.maxPayloadBytes))) return error;
  const { stack: _stack, path: _path, thrownMessage: _thrown, ...details } = error.details;
  return {
    code: error.code,
    message: `${clipText(error.message, SHORT_ERROR_MESSAGE_CHARS)} (clipped: the reply had no room for the rest)`,
    details,
  };
}

/**
 * Decodes a settlement returned by the runtime's start() (the encoding: wire/guest-ops.ts
 * `EncodedSettlement`); undefined if malformed. `encoded` is checked, not trusted.
 */
export function decodeSettlement(encoded: string): DecodedSettlement | undefined {
  const tag = encoded[0];
  if (tag === "+") return { ok: true, text: encoded.slice(1) };
  if (tag === "-") return { ok: false, text: encoded.slice(1) };
  const end = tag === "*" ? encoded.indexOf("\u0000") : -1;
  if (end === -1) return undefined;
  try {
    return { ok: true, text: encoded.slice(end + 1), lazyKey: JSON.parse(encoded.slice(1, end)) as unknown };
  } catch {
    return undefined;
  }
}

/**
 * The function behind the runtime's host channel (runtime/host-channel.ts), one per context: it handles the
 * `GuestOps`. It never throws into the guest (a host exception would carry host paths) and checks every
 * argument: guest code is never trusted here.
 */
export function createGuestOpHandler(deps: ChannelDeps, self: () => ScriptContext | undefined): GuestOpHandler {
  const ownCall = (callId: unknown): WorkerCall | undefined => {
    if (typeof callId !== "number") return undefined;
    const call = deps.calls.get(callId);
    const context = self();
    if (call === undefined || context === undefined || call.context !== context || call.finished) return undefined;
    return call;
  };
  return (op, a, b, c, d) => {
    try {
      const collector = deps.collector();
      if (collector === undefined) return undefined;
      // Each branch narrows the untrusted positions to that op's `GuestOps` entry before using them.
      if (op === ("settle" satisfies keyof GuestOps)) {
        const call = ownCall(a);
        if (call === undefined || typeof b !== "boolean" || typeof c !== "string") return undefined;
        settleCall(collector, deps.calls, call, b, c, d);
      } else if (op === ("request" satisfies keyof GuestOps)) {
        const call = ownCall(a);
        // The host's protocol takes a request id only as a count: anything else in a reply would have it kill the worker.
        if (call === undefined || !isCount(b) || (c !== "next" && c !== "capability") || typeof d !== "string") return undefined;
        if (d.length > call.maxPayloadBytes) return undefined;
        if (!charge(collector, "payloadBytes", d, replyBudgetBytes(call.maxPayloadBytes))) {
          failCall(
            collector,
            deps.calls,
            call,
            "PAYLOAD_TOO_LARGE",
            `sent more to the host in one go than a reply has room for (${replyBudgetBytes(call.maxPayloadBytes)} bytes of requests and values)`,
          );
          return undefined;
        }
        if (c === "next") {
          if (call.nextRequested) return undefined;
          call.nextRequested = true;
        } else {
          if (call.pendingCapabilities >= MAX_PENDING_CAPABILITIES) return undefined;
          call.pendingCapabilities++;
        }
        call.pendingRequests++;
        const requestId: Request[1] = b;
        const requestOp: Request[2] = c;
        const value: Request[3] = d;
        collector.outcomes.push({ type: "request", callId: call.callId, requestId, op: requestOp, value });
      } else if (op === ("log" satisfies keyof GuestOps)) {
        const context = self();
        if (context === undefined || typeof a !== "string" || !LEVELS.has(a) || typeof b !== "string") return undefined;
        const limiter = deps.limiter;
        if (!limiter.take()) return undefined;
        const message: Log[1] = b.length > deps.maxLogChars ? b.slice(0, deps.maxLogChars) : b;
        // A line the reply has no room for is dropped like one over the rate, and counted with them.
        if (!charge(collector, "logBytes", message, REPLY_LOG_BYTES)) {
          limiter.countDropped();
          return undefined;
        }
        const entry = { tenant: context.tenant.name, runId: context.runId, script: context.script };
        const dropped = limiter.drainDropped();
        if (dropped > 0)
          collector.logs.push({
            ...entry,
            level: "warn",
            message: `${dropped} log lines dropped: over the limit of ${limiter.perSecond} per second or of ${REPLY_LOG_BYTES} bytes in one reply`,
          });
        const level = a as Log[0];
        collector.logs.push({ ...entry, level, message });
      }
    } catch {
      // Never let a host exception reach guest code.
    }
    return undefined;
  };
}
