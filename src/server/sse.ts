import type { Context } from "hono";
import type { SessionManager } from "../session/manager.js";
import type { HookboxEvent } from "../events/types.js";
import type { StoredEventText } from "../store/types.js";
import type { Redactor } from "./redact.js";
import { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { SseBody } from "./sse-body.js";
import { responseHeadersSet } from "./cors.js";

const HEARTBEAT_MS = 15_000;

export interface StreamRunEventsOptions {
  manager: SessionManager;
  runId: string;
  afterSeq: number;
  redact: Redactor;
  /** Called once when the stream ends, however it ends. */
  onClose(): void;
  /** Charges each page of stored events to the tenant, waiting while it is over its budget (event-replay-budget.ts). */
  pace?(chars: number, signal: AbortSignal): Promise<void>;
}

/**
 * One SSE message per event: `id:` is the event's seq, `data:` the event JSON (its `type` inside, so a
 * plain `onmessage` sees everything). A reconnect with `Last-Event-ID: N` gets seq N+1 onwards.
 * Text deltas of a streaming model come between them with no `id:` (docs/events.md, "Live text").
 * The stream ends after the run's final `run-finished`. Stored events are read a page at a time, and the
 * writes wait for the connection once it falls behind (sse-body.ts), so a slow reader of a huge run holds a page
 * and the body's high-water mark, not the run.
 */
export function streamRunEvents(c: Context, options: StreamRunEventsOptions): Response {
  // On @hono/node-server the stream is written to Node's response itself; elsewhere it is the Response's body.
  const response = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  const direct = response instanceof ServerResponse;
  const body = direct ? new SseBody({ response, headers: { ...SSE_HEADERS, ...headersSetBefore(c) } }) : new SseBody();
  const closed = new AbortController();
  body.onCancel(() => closed.abort());
  void (async () => {
    const heartbeat = setInterval(() => void body.write(": keep-alive\n\n"), HEARTBEAT_MS);
    try {
      const pace = options.pace && ((chars: number) => options.pace!(chars, closed.signal));
      reading: for await (const batch of options.manager.eventTextBatches(options.runId, options.afterSeq, {
        signal: closed.signal,
        textDeltas: true,
        ...(pace ? { pace } : {}),
      })) {
        for (const item of batch) {
          // A text delta has no id: Last-Event-ID names stored events only. The writer waits only for a slow reader.
          const goOn =
            item.seq === undefined ? body.queueMessage(item.json) : body.queueMessage(redactEventText(item, options.redact), item.seq);
          if (!goOn) await body.drain();
          if (body.closed) break reading;
        }
      }
    } catch (error) {
      // The reader gets the end of the stream; the operator gets the reason.
      console.error(error);
    } finally {
      clearInterval(heartbeat);
      body.close();
      options.onClose();
    }
  })();
  if (direct) return RESPONSE_ALREADY_SENT;
  for (const [name, value] of Object.entries(SSE_HEADERS)) c.header(name, value);
  return c.body(body.stream);
}

const SSE_HEADERS: Record<string, string> = {
  "Transfer-Encoding": "chunked",
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  Connection: "keep-alive",
};

/** Headers a middleware set on the response before the route (CORS, src/server/cors.ts), which a direct write must send itself. */
function headersSetBefore(c: Context): Record<string, string> {
  return responseHeadersSet(c) ? Object.fromEntries(c.res.headers) : {};
}

/**
 * Error texts in events (a run's reason, a tool's error) may name host paths; results and prompts are the
 * tenant's own data and pass as stored. Only events whose text has such a key are parsed: every event text is
 * JSON.stringify's (stored as made), where a key is written `"name":` and a quote inside a string is escaped.
 */
function redactEventText(item: StoredEventText, redact: Redactor): string {
  const mayCarryError =
    (item.type === "run-finished" && item.json.includes('"reason":')) || (item.type === "tool-finished" && item.json.includes('"error":'));
  if (!mayCarryError) return item.json;
  const event = JSON.parse(item.json) as HookboxEvent;
  if (event.type === "run-finished" && event.reason !== undefined) return JSON.stringify({ ...event, reason: redact(event.reason) });
  if (event.type === "tool-finished" && event.error)
    return JSON.stringify({ ...event, error: { ...event.error, message: redact(event.error.message) } });
  return item.json;
}
