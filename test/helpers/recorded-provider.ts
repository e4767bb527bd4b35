import { readFileSync } from "node:fs";
import { join } from "node:path";

/*
 * A recording `fetch` for the real provider packages (`createAnthropic({ fetch })`, ...): it answers each
 * request with the next recorded response from test/fixtures/providers (JSON bodies and SSE streams in the
 * providers' wire formats, see the README there) and keeps every request body, so a test asserts exactly
 * what hookbox sent back to the provider.
 */

export const FIXTURES = join(import.meta.dirname, "../fixtures/providers");

export type Reply =
  /** A fixture file: `.json` is a 200 JSON body, `.sse` a 200 event stream. */
  | string
  /** An HTTP error answer. */
  | { status: number; body: unknown; headers?: Record<string, string> }
  /** A fixture stream whose connection breaks after `bytes` bytes. */
  | { file: string; cutAfterBytes: number };

export interface RecordedRequest {
  url: string;
  body: any;
}

export interface Recording {
  fetch: typeof globalThis.fetch;
  requests: RecordedRequest[];
}

export const fixture = (file: string): string => readFileSync(join(FIXTURES, file), "utf8");

/** A stream of `text` in small chunks, as a network delivers it, optionally breaking after `cutAfter` bytes. */
function chunked(text: string, cutAfter?: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const end = cutAfter ?? bytes.length;
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= end) {
        if (cutAfter !== undefined) controller.error(new TypeError("terminated", { cause: new Error("other side closed") }));
        else controller.close();
        return;
      }
      const size = Math.min(97, end - offset);
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

function response(reply: Reply): Response {
  if (typeof reply === "string") {
    const streamed = reply.endsWith(".sse");
    return new Response(streamed ? chunked(fixture(reply)) : fixture(reply), {
      status: 200,
      headers: { "content-type": streamed ? "text/event-stream" : "application/json" },
    });
  }
  if ("file" in reply) {
    return new Response(chunked(fixture(reply.file), reply.cutAfterBytes), {
      status: 200,
      headers: { "content-type": "text/event-stream" },
    });
  }
  return new Response(JSON.stringify(reply.body), {
    status: reply.status,
    headers: { "content-type": "application/json", ...reply.headers },
  });
}

/** Replays `replies` in order; a request beyond them fails the test loudly. */
export function recording(replies: Reply[]): Recording {
  const requests: RecordedRequest[] = [];
  let next = 0;
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = input instanceof Request ? input.url : input.toString();
    const text = typeof init?.body === "string" ? init.body : "";
    requests.push({ url, body: text ? JSON.parse(text) : undefined });
    const reply = replies[next++];
    if (reply === undefined) throw new Error(`recorded provider: request ${next} has no recorded answer (${url})`);
    return response(reply);
  };
  return { fetch: fetch as typeof globalThis.fetch, requests };
}

/**
 * The same replay as a real HTTP server on loopback, for what builds its own provider from a base URL
 * (`--model openai-compatible:MODEL --base-url URL`).
 */
export async function startRecordedServer(replies: Reply[]): Promise<{ url: string; requests: RecordedRequest[]; close(): Promise<void> }> {
  const { createServer } = await import("node:http");
  const recorded = recording(replies);
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const answer = await recorded.fetch(`http://127.0.0.1${req.url}`, { method: req.method, body }).catch((error: Error) => {
      return new Response(JSON.stringify({ error: { message: error.message } }), { status: 500 });
    });
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (!answer.body) return res.end();
    const reader = answer.body.getReader();
    try {
      for (let next = await reader.read(); !next.done; next = await reader.read()) res.write(next.value);
      res.end();
    } catch {
      res.destroy(); // a recorded broken connection breaks this one too
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests: recorded.requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
