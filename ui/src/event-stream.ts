import { authHeaders, segment } from "./api.js";
import type { RunEvent } from "./types.js";

/*
 * A run's events over Server-Sent Events, read with fetch and a streaming body reader: an EventSource cannot
 * send the Authorization header, and the key must never go into a URL. After a dropped connection it
 * reconnects with `Last-Event-ID` set to the last stored event it handed out, so nothing is missed and
 * nothing comes twice (events at or below that seq are dropped should the server send them again). Text
 * deltas carry no seq and are handed out as they come.
 */

export interface FollowHandlers {
  /** Every message of one read from the network, in order (a batch keeps re-renders few). */
  onEvents(events: RunEvent[]): void;
  onState(state: "connecting" | "live" | "reconnecting" | "ended", detail?: string): void;
  /** The stream cannot be read (the key was refused, the run is unknown): it is not retried. */
  onFailure(status: number, message: string): void;
}

export interface FollowOptions {
  /** The fetch to read with (default: the page's own). */
  fetch?: typeof fetch;
  /** Start after this seq (default 0: the whole run). */
  afterSeq?: number;
}

export async function followRun(runId: string, handlers: FollowHandlers, signal: AbortSignal, options: FollowOptions = {}): Promise<void> {
  const get = options.fetch ?? fetch;
  let lastSeq = options.afterSeq ?? 0;
  let failures = 0;
  for (;;) {
    if (signal.aborted) return;
    handlers.onState(lastSeq === 0 ? "connecting" : "reconnecting");
    let ended = false;
    try {
      const response = await get(`/v1/runs/${segment(runId)}/events`, {
        headers: { ...authHeaders(), "last-event-id": String(lastSeq) },
        cache: "no-store",
        signal,
      });
      // Nothing more to send (a finished run read to its end).
      if (response.status === 204) ended = true;
      else if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
        const message = body?.error?.message ?? `HTTP ${response.status}`;
        if (response.status !== 429 && response.status < 500) {
          handlers.onFailure(response.status, message);
          return;
        }
        throw new Error(message);
      } else {
        handlers.onState("live");
        failures = 0;
        for await (const batch of messages(response.body)) {
          const fresh: RunEvent[] = [];
          for (const event of batch) {
            if (event.seq !== undefined) {
              if (event.seq <= lastSeq) continue;
              lastSeq = event.seq;
              if (event.type === "run-finished") ended = true;
            } else if (ended) continue;
            fresh.push(event);
          }
          if (fresh.length) handlers.onEvents(fresh);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      failures += 1;
      handlers.onState("reconnecting", (error as Error)?.message);
    }
    if (ended) {
      handlers.onState("ended");
      return;
    }
    // The stream ended before the run did (a restart, a dropped connection): wait a little, then go on.
    await sleep(Math.min(500 * 2 ** Math.min(failures, 5), 10_000), signal);
  }
}

/** The SSE messages of a body, a batch per network read; comments (`: keep-alive`) and unknown fields are skipped. */
async function* messages(body: ReadableStream<Uint8Array>): AsyncGenerator<RunEvent[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      const batch: RunEvent[] = [];
      let end: number;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
        const data = block
          .split(/\r?\n/)
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5))
          .join("\n");
        if (!data) continue;
        try {
          batch.push(JSON.parse(data) as RunEvent);
        } catch {
          /* a message that is not JSON is not one of ours: skipped */
        }
      }
      if (batch.length) yield batch;
    }
  } finally {
    reader.releaseLock();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
