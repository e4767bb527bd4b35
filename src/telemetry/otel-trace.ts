import { AsyncLocalStorage } from "node:async_hooks";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { TracerProvider, type SpanExporter } from "@opentelemetry/sdk-trace";
import type { Attributes, SpanOptions } from "@opentelemetry/api";
import { HookboxError } from "../errors.js";
import type { HookSpanInfo, RunTrace, RunTraceStart } from "./run-trace.js";
import { TENANT_ATTRIBUTE, TenantSpanProcessor } from "./tenant-batches.js";

/*
 * The exporting tracer, loaded only when an OTLP endpoint is configured (tracing.ts). Parents are passed
 * explicitly (no global context manager is installed, so the host application's OTel setup is untouched);
 * an AsyncLocalStorage of our own carries "the span we are in" from a tool span to the hook calls inside it.
 */

export interface OtelTracing {
  startRun(start: RunTraceStart): RunTrace;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

type Protocol = "http/protobuf" | "http/json";

/*
 * What one span may carry (docs/observability.md): names, attribute values and status messages come from
 * tenants' scripts and the model (tool names, errors, reasons), so each is clipped. A span is then a few
 * kilobytes at most, and a batch of them stays far below a collector's request limit.
 */
/** The longest attribute value (the SDK clips; event attributes too). */
export const ATTRIBUTE_VALUE_CHARS = 1024;
/** The longest span name (`execute_tool <the model's tool name>`). */
export const SPAN_NAME_CHARS = 128;
/** The longest status message (an error's message, a run's reason). */
export const STATUS_MESSAGE_CHARS = 1024;

const BATCHING = { maxQueuePerTenant: 2048, maxExportBatchSize: 512, maxTenants: 256, maxExportsInFlight: 8 };

/** `text` cut to `max` characters, marked with an ellipsis when it was cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The OTLP protocol from the standard variables; the SDK's default is http/protobuf. */
export function otlpProtocol(env: NodeJS.ProcessEnv): Protocol {
  // As the OTel spec says, an empty variable counts as unset.
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim();
  const name = specific ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = specific || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || "http/protobuf";
  if (value === "http/protobuf" || value === "http/json") return value;
  throw new HookboxError(
    "CONFIG",
    `${name}="${value}" is not supported: hookbox exports traces over OTLP/HTTP (http/protobuf or http/json)`,
  );
}

async function exporterFor(protocol: Protocol): Promise<SpanExporter> {
  // The exporters read the endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
  if (protocol === "http/json") return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter();
  return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter();
}

export async function createOtelTracing(env: NodeJS.ProcessEnv): Promise<OtelTracing> {
  const exporter = await exporterFor(otlpProtocol(env));
  const batches = new TenantSpanProcessor(exporter, BATCHING);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME?.trim() || "hookbox" }),
    spanLimits: { attributeValueLengthLimit: ATTRIBUTE_VALUE_CHARS },
    spanProcessors: [batches],
  });
  const tracer = provider.getTracer("hookbox");
  const propagator = new W3CTraceContextPropagator();
  // "The span we are in", tagged with its run: a run started from inside another run's tool does not nest under it.
  const current = new AsyncLocalStorage<{ run: Span; context: Context }>();

  const parentFrom = (traceparent: string | undefined): Context =>
    traceparent
      ? propagator.extract(
          ROOT_CONTEXT,
          { traceparent },
          { get: (carrier, key) => carrier[key as "traceparent"], keys: () => ["traceparent"] },
        )
      : ROOT_CONTEXT;

  return {
    startRun(start) {
      // Every span names its tenant: spans are batched by it, and a reader can filter by it.
      const startSpan = (name: string, options: SpanOptions & { attributes: Attributes }, parent: Context) =>
        tracer.startSpan(
          clip(name, SPAN_NAME_CHARS),
          { ...options, attributes: { ...options.attributes, [TENANT_ATTRIBUTE]: start.tenant } },
          parent,
        );
      const runSpan = startSpan(
        "hookbox.run",
        { kind: SpanKind.INTERNAL, attributes: { "hookbox.session_id": start.sessionId, "hookbox.run_id": start.runId } },
        parentFrom(start.traceparent),
      );
      const runContext = trace.setSpan(ROOT_CONTEXT, runSpan);
      const parent = () => {
        const store = current.getStore();
        return store?.run === runSpan ? store.context : runContext;
      };
      const child = <T>(span: Span, work: () => Promise<T>) => current.run({ run: runSpan, context: trace.setSpan(parent(), span) }, work);
      return {
        traceId: runSpan.spanContext().traceId,
        async inference(requestModel, work) {
          const span = startSpan(
            `chat ${requestModel}`,
            { kind: SpanKind.CLIENT, attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": requestModel } },
            parent(),
          );
          return ended(span, () =>
            child(span, () =>
              work({
                answered(model, usage) {
                  span.setAttributes({
                    "gen_ai.response.model": model,
                    "gen_ai.usage.input_tokens": usage.inputTokens,
                    "gen_ai.usage.output_tokens": usage.outputTokens,
                  });
                },
                retried(retry) {
                  span.addEvent("hookbox.inference_retry", {
                    "hookbox.attempt": retry.attempt,
                    "hookbox.delay_ms": retry.delayMs,
                    "hookbox.model": retry.model,
                    ...(retry.status !== undefined ? { "http.response.status_code": retry.status } : {}),
                  });
                },
              }),
            ),
          );
        },
        async tool(call, work) {
          const span = startSpan(
            `execute_tool ${call.name}`,
            {
              kind: SpanKind.INTERNAL,
              attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.id },
            },
            parent(),
          );
          return ended(span, () =>
            child(span, () =>
              work({
                failed(message) {
                  span.setStatus({ code: SpanStatusCode.ERROR, message: clip(message, STATUS_MESSAGE_CHARS) });
                },
              }),
            ),
          );
        },
        async hook(info: HookSpanInfo, work) {
          const span = startSpan(
            "hookbox.hook",
            {
              kind: SpanKind.INTERNAL,
              attributes: {
                "hookbox.hook": info.hook,
                "hookbox.script": info.script,
                ...(info.bundleHash ? { "hookbox.bundle_hash": info.bundleHash } : {}),
                ...(info.shadow ? { "hookbox.shadow": true } : {}),
              },
            },
            parent(),
          );
          try {
            const decision = await child(span, work);
            span.setAttribute("hookbox.decision", decisionOf(decision));
            return decision;
          } catch (error) {
            span.setAttribute("hookbox.decision", "error");
            throw error;
          } finally {
            span.end();
          }
        },
        end(outcome) {
          runSpan.setAttribute("hookbox.status", outcome.status);
          if (outcome.errorCode) runSpan.setAttribute("hookbox.error_code", outcome.errorCode);
          if (outcome.usage) {
            runSpan.setAttributes({
              "gen_ai.usage.input_tokens": outcome.usage.inputTokens,
              "gen_ai.usage.output_tokens": outcome.usage.outputTokens,
              "hookbox.cost_usd": outcome.usage.costUsd,
            });
          }
          if (outcome.status !== "completed")
            runSpan.setStatus({ code: SpanStatusCode.ERROR, message: clip(outcome.reason ?? outcome.status, STATUS_MESSAGE_CHARS) });
          runSpan.end();
          // A finished run's spans leave now (its tenant's, no one else's): a process that exits soon after loses nothing.
          batches.flushTenant(start.tenant).catch(() => {});
        },
      };
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/** Ends the span when the work settles; a throw marks it as an error. */
async function ended<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: clip(error instanceof Error ? error.message : String(error), STATUS_MESSAGE_CHARS),
    });
    throw error;
  } finally {
    span.end();
  }
}

/** "none" for no opinion, the action when there is one, "transform" for an afterToolCall rewrite. */
function decisionOf(value: unknown): string {
  if (value === undefined || value === null) return "none";
  if (typeof value === "object" && typeof (value as { action?: unknown }).action === "string") return (value as { action: string }).action;
  return "transform";
}
