import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { followRun } from "../../ui/src/event-stream.js";
import type { RunEvent } from "../../ui/src/types.js";

/*
 * The inspector's SSE reader (ui/src/event-stream.ts, the code the page runs) against a real `hookbox serve`,
 * with connections cut in the middle of a message: it reconnects with `Last-Event-ID` and hands out every stored
 * event exactly once, in seq order. The cuts are made by the fetch it is given (a real fetch whose body stops
 * after a number of bytes, as a dropped connection does).
 */

let server: ServeProcess;
const acme = () => api(server.url, "acme-key");

beforeAll(async () => {
  const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
  server = await startServe({ config: fixture.config, store: fixture.store });
  // The page keeps its key in sessionStorage; Node 24 has none without a flag.
  const stored = new Map<string, string>([["hookbox.apiKey", "acme-key"]]);
  Object.defineProperty(globalThis, "sessionStorage", {
    configurable: true,
    value: {
      getItem: (key: string) => stored.get(key) ?? null,
      setItem: (key: string, value: string) => stored.set(key, value),
      removeItem: (key: string) => stored.delete(key),
    },
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** A fetch against the server whose first `cuts.length` answers break after that many bytes of their body. */
function cuttingFetch(cuts: number[], onRequest: (lastEventId: string | null) => void): typeof fetch {
  let connection = 0;
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    onRequest(headers.get("last-event-id"));
    const response = await fetch(`${server.url}${String(input)}`, init);
    const cut = cuts[connection++];
    if (cut === undefined || !response.body) return response;
    let passed = 0;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        if (passed + value.length < cut) {
          passed += value.length;
          return controller.enqueue(value);
        }
        controller.enqueue(value.subarray(0, cut - passed));
        await reader.cancel();
        controller.error(new TypeError("network error: the connection dropped"));
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

describe("the inspector's event stream", () => {
  it(
    "reconnects with Last-Event-ID after connections cut mid-message: every stored event once, in order",
    { timeout: 120_000 },
    async () => {
      const { sessionId } = (await acme().request("POST", "/v1/sessions", {})).body;
      const { runId } = (await acme().request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both", step: true })).body;
      const seen: RunEvent[] = [];
      const lastEventIds: [string | null, string][] = [];
      const states: string[] = [];
      const controller = new AbortController();
      const failures: string[] = [];
      // Cuts land inside the first messages: 150 bytes is within the first or second event of a connection.
      await followRun(
        runId,
        {
          onEvents(events) {
            seen.push(...events);
            for (const event of events)
              if (event.type === "debugger.pause") void acme().request("POST", `/v1/runs/${runId}/continue`, { pauseId: event.pauseId });
          },
          onState: (state) => states.push(state),
          onFailure: (status, message) => failures.push(`${status} ${message}`),
        },
        controller.signal,
        {
          // Each request's Last-Event-ID beside the seq of the last event handed out before it.
          fetch: cuttingFetch([150, 450, 150, 700], (lastEventId) => lastEventIds.push([lastEventId, String(seen.at(-1)?.seq ?? 0)])),
        },
      );
      expect(failures).toEqual([]);
      const stored = (await readEvents(server.url, "acme-key", runId)).messages.map((message) => message.event);
      expect(seen.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
      expect(seen).toEqual(stored);
      expect(seen.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
      // Each reconnect asked from the last event handed out; the first connection from the start.
      expect(lastEventIds.length).toBeGreaterThanOrEqual(5);
      expect(lastEventIds[0]).toEqual(["0", "0"]);
      for (const [asked, handedOut] of lastEventIds) expect(asked).toBe(handedOut);
      expect(Number(lastEventIds.at(-1)![0])).toBeGreaterThan(0);
      expect(states.filter((state) => state === "reconnecting").length).toBeGreaterThanOrEqual(4);
      expect(states.at(-1)).toBe("ended");
    },
  );
});
