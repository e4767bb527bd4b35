import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { shutdownTracing } from "../../src/telemetry/tracing.js";

/** One exported span, flattened from OTLP/JSON: ids as lowercase hex, attribute values as JS values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status?: { code?: number; message?: string };
  events: { name: string; attributes: Record<string, string | number | boolean> }[];
  resource: Record<string, string | number | boolean>;
}

export interface OtlpRequest {
  path: string;
  contentType: string;
  body: Buffer;
  /** Refused as too large (413), as a collector refuses a request over its limit: its spans were not taken. */
  refused?: boolean;
}

export interface ReceiverOptions {
  /** Larger requests are answered 413, as a collector's request limit does. */
  maxRequestBytes?: number;
  /** Each request is answered this long after it arrived (a busy collector). */
  delayMs?: number;
}

export interface OtlpReceiver {
  url: string;
  requests: OtlpRequest[];
  spans(): ReceivedSpan[];
  /** The spans of requests refused as too large. */
  refusedSpans(): ReceivedSpan[];
  waitForSpans(count: number, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/**
 * For a test file whose runs export in this process (library use): a receiver started before its tests, the
 * OTLP variables pointing at it (http/json), and after its tests the tracer shut down and the variables restored.
 */
export function receiverForThisProcess(options: ReceiverOptions = {}): { receiver: OtlpReceiver } {
  const shared = {} as { receiver: OtlpReceiver };
  const saved = { ...process.env };
  beforeAll(async () => {
    shared.receiver = await startOtlpReceiver(options);
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = shared.receiver.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  });
  afterAll(async () => {
    await shutdownTracing();
    process.env = saved;
    await shared.receiver?.close();
  });
  return shared;
}

/**
 * A real OTLP/HTTP trace receiver on loopback, like a collector's: it accepts POST /v1/traces, records every
 * request, and decodes http/json bodies into spans (protobuf bodies are kept raw). With `maxRequestBytes`, a
 * bigger request is answered 413 and its spans are not taken, as a collector's request limit does (it is still
 * recorded, marked `refused`, so a test can see whose spans it held); with `delayMs`, each answer waits.
 */
export async function startOtlpReceiver(options: ReceiverOptions = {}): Promise<OtlpReceiver> {
  const requests: OtlpRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const body = await read(req);
    const refused = options.maxRequestBytes !== undefined && body.length > options.maxRequestBytes;
    requests.push({ path: req.url ?? "", contentType: String(req.headers["content-type"] ?? ""), body, ...(refused ? { refused } : {}) });
    if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    if (refused) {
      res.writeHead(413, { "content-type": "text/plain" });
      res.end("request too large");
      return;
    }
    res.writeHead(200, { "content-type": String(req.headers["content-type"] ?? "application/json") });
    res.end(req.headers["content-type"]?.includes("json") ? "{}" : "");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const decoded = (refused: boolean) =>
    requests.filter((r) => r.contentType.includes("json") && Boolean(r.refused) === refused).flatMap((r) => decodeJson(r.body));
  const spans = () => decoded(false);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    refusedSpans: () => decoded(true),
    async waitForSpans(count, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (spans().length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      return spans();
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

const valueOf = (v: AnyValue) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? "";
const attributes = (list: KeyValue[] = []) => Object.fromEntries(list.map((kv) => [kv.key, valueOf(kv.value)]));
/** OTLP/JSON ids are hex; some encoders send base64: both become hex. */
const hexId = (id: string | undefined) =>
  !id
    ? undefined
    : /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16)
      ? id.toLowerCase()
      : Buffer.from(id, "base64").toString("hex");

function decodeJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString("utf8")) as {
    resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans: any[] }[] }[];
  };
  return request.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((span) => ({
        traceId: hexId(span.traceId)!,
        spanId: hexId(span.spanId)!,
        ...(hexId(span.parentSpanId) ? { parentSpanId: hexId(span.parentSpanId) } : {}),
        name: span.name,
        kind: span.kind,
        attributes: attributes(span.attributes),
        status: span.status,
        events: (span.events ?? []).map((e: { name: string; attributes?: KeyValue[] }) => ({
          name: e.name,
          attributes: attributes(e.attributes),
        })),
        resource: attributes(rs.resource?.attributes),
      })),
    ),
  );
}

function read(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
