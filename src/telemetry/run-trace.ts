import { newTraceId } from "../loop/ids.js";
import type { RunUsage, TokenUsage } from "../host/usage.js";

/*
 * What the loop tells the tracer. The loop always has a RunTrace; without an OTLP endpoint it is the no-op
 * below, so the loop never knows (and never loads) OpenTelemetry. The exporting one is otel-trace.ts.
 */

export interface InferenceSpan {
  /** The model that answered (the fallback, after a switch) and what it used. */
  answered(model: string, usage: TokenUsage): void;
  /** A retry or a switch to the fallback, recorded on the span. */
  retried(retry: { attempt: number; delayMs: number; status?: number; model: string }): void;
}

export interface ToolSpan {
  failed(message: string): void;
}

export interface HookSpanInfo {
  hook: string;
  script: string;
  bundleHash?: string;
  /** A shadow script's call: recorded, never enforced. */
  shadow?: boolean;
}

export interface RunTrace {
  /** The run's trace id: 32 lowercase hex digits (the OTel trace id when exporting; the caller's with a traceparent). */
  readonly traceId: string;
  /** Set on the no-op trace only: nothing is recorded, so a caller may run its work without a span around it. */
  readonly noop?: true;
  inference<T>(requestModel: string, work: (span: InferenceSpan) => Promise<T>): Promise<T>;
  tool<T>(call: { name: string; id: string }, work: (span: ToolSpan) => Promise<T>): Promise<T>;
  /** One hook call; the span's decision is read from what the hook returned. */
  hook<T>(info: HookSpanInfo, work: () => Promise<T>): Promise<T>;
  end(outcome: { status: string; errorCode?: string; reason?: string; usage?: RunUsage }): void;
}

export interface RunTraceStart {
  sessionId: string;
  runId: string;
  tenant: string;
  /** A W3C traceparent: the run becomes a child of the caller's span. */
  traceparent?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parts of a valid W3C traceparent (version 00 layout; all-zero ids and version ff are invalid). */
export function parseTraceparent(value: string): { traceId: string; spanId: string; sampled: boolean } | undefined {
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match;
  if (version === "ff" || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** Nothing exported: the trace id still joins the caller's trace when a traceparent came in. */
export function noopRunTrace(start: Pick<RunTraceStart, "traceparent">): RunTrace {
  const parent = start.traceparent ? parseTraceparent(start.traceparent) : undefined;
  const span = { answered() {}, retried() {}, failed() {} };
  return {
    traceId: parent?.traceId ?? newTraceId(),
    noop: true,
    inference: (_model, work) => work(span),
    tool: (_call, work) => work(span),
    hook: (_info, work) => work(),
    end() {},
  };
}
