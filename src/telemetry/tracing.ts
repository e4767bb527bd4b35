import { noopRunTrace, type RunTrace, type RunTraceStart } from "./run-trace.js";
import type { OtelTracing } from "./otel-trace.js";

/*
 * The process's tracer. OpenTelemetry is imported only when an OTLP endpoint is configured, so a process
 * without one loads nothing of it and its runs pay nothing (the no-op trace only makes a trace id).
 */

let loading: Promise<OtelTracing | undefined> | undefined;

/** True when the standard variables ask for trace export (and OTEL_SDK_DISABLED does not forbid it). */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** Loads the exporter once per process; a bad OTEL_* setting rejects with a CONFIG error naming it. */
export function loadTracing(env: NodeJS.ProcessEnv = process.env): Promise<OtelTracing | undefined> {
  if (!tracingConfigured(env)) return Promise.resolve(undefined);
  loading ??= import("./otel-trace.js").then((m) => m.createOtelTracing(env));
  return loading;
}

/** A run's trace: exported when tracing is loaded, else the no-op one. */
export function startRunTrace(tracing: OtelTracing | undefined, start: RunTraceStart): RunTrace {
  return tracing ? tracing.startRun(start) : noopRunTrace(start);
}

/** Exports what is still buffered and stops the exporter (the CLI before it exits, the server on shutdown). */
export async function shutdownTracing(): Promise<void> {
  const current = loading;
  loading = undefined;
  const tracing = await current?.catch(() => undefined);
  await tracing?.shutdown().catch(() => {});
}
