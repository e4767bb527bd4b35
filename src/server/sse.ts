import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { SessionManager } from "../session/manager.js";

const HEARTBEAT_MS = 15_000;

/**
 * One SSE message per event: `id:` is the event's seq, `data:` the event JSON (its `type` inside, so a
 * plain `onmessage` sees everything). A reconnect with `Last-Event-ID: N` gets seq N+1 onwards.
 * The stream ends after the run's final `run-finished`.
 */
export function streamRunEvents(c: Context, manager: SessionManager, runId: string, afterSeq: number): Response {
  return streamSSE(c, async (stream) => {
    const closed = new AbortController();
    stream.onAbort(() => closed.abort());
    const heartbeat = setInterval(() => void stream.write(": keep-alive\n\n").catch(() => closed.abort()), HEARTBEAT_MS);
    try {
      for await (const event of manager.events(runId, afterSeq, closed.signal)) {
        await stream.writeSSE({ id: String(event.seq), data: JSON.stringify(event) });
      }
    } finally {
      clearInterval(heartbeat);
    }
  });
}
