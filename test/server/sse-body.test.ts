import { describe, expect, it } from "vitest";
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SseBody } from "../../src/server/sse-body.js";

const text = (chunk: Uint8Array | undefined) => Buffer.from(chunk ?? new Uint8Array()).toString("utf8");
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("an event stream's body (src/server/sse-body.ts)", () => {
  it("hands the messages written in one turn to a waiting connection as one chunk, in SSE's form", async () => {
    const body = new SseBody();
    const reader = body.stream.getReader();
    const read = reader.read(); // the connection waits for more
    await body.message('{"seq":1}', "1");
    await body.message('{"type":"text-delta"}');
    await body.message('{"seq":2}', "2");
    const first = await read;
    expect(text(first.value)).toBe('data: {"seq":1}\nid: 1\n\ndata: {"type":"text-delta"}\n\ndata: {"seq":2}\nid: 2\n\n');
    await body.message('{"seq":3}', "3");
    expect(text((await reader.read()).value)).toBe('data: {"seq":3}\nid: 3\n\n');
  });

  it("writes each line of a text with line breaks as a data line of its own", async () => {
    const body = new SseBody();
    const reader = body.stream.getReader();
    await body.message("one\ntwo\r\nthree", "7");
    expect(text((await reader.read()).value)).toBe("data: one\ndata: two\ndata: three\nid: 7\n\n");
  });

  it("lets a writer go on while the connection keeps up, and holds it once more than the high-water mark waits", async () => {
    const body = new SseBody({ highWaterChars: 10 });
    const reader = body.stream.getReader();
    let held = true;
    await body.write("12345"); // under the mark: resolves at once
    void body.write("67890abcdef").then(() => (held = false));
    await nextTurn();
    await nextTurn();
    expect(held).toBe(true);
    expect(text((await reader.read()).value)).toBe("1234567890abcdef");
    await nextTurn();
    expect(held).toBe(false);
  });

  it("queues messages without a promise while the connection keeps up, and says when the writer is to wait for drain()", async () => {
    const body = new SseBody({ highWaterChars: 40 });
    const reader = body.stream.getReader();
    expect(body.queueMessage('{"seq":1}', 1)).toBe(true);
    expect(body.queueMessage('{"seq":2,"pad":"xxxxxxxxxx"}', 2)).toBe(false); // now over the mark
    let drained = false;
    void body.drain().then(() => (drained = true));
    await nextTurn();
    expect(drained).toBe(false);
    expect(text((await reader.read()).value)).toBe('data: {"seq":1}\nid: 1\n\ndata: {"seq":2,"pad":"xxxxxxxxxx"}\nid: 2\n\n');
    await nextTurn();
    expect(drained).toBe(true);
    expect(body.queueMessage("a\nb", 3)).toBe(true);
    body.close();
    expect(text((await reader.read()).value)).toBe("data: a\ndata: b\nid: 3\n\n");
  });

  it("ends after what is queued; a connection that goes away releases a held writer and tells the stream", async () => {
    const closing = new SseBody();
    void closing.write("last");
    closing.close();
    const closingReader = closing.stream.getReader();
    expect(text((await closingReader.read()).value)).toBe("last");
    expect((await closingReader.read()).done).toBe(true);

    const body = new SseBody({ highWaterChars: 1 });
    let cancelled = 0;
    body.onCancel(() => cancelled++);
    const held = body.write("more than one character");
    await body.stream.cancel();
    await held;
    expect(cancelled).toBe(1);
    expect(body.closed).toBe(true);
    await body.write("after the end"); // ignored, never held
  });

  describe("written to Node's response", () => {
    /** A loopback server whose one request's response is handed to `take`; resolves with the server's URL. */
    async function serving(take: (response: ServerResponse) => void): Promise<{ url: string; server: Server }> {
      const server = createServer((_request, response) => take(response));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
    }
    const headers = { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" };

    it("sends its head before anything is written, then the messages as they are written, and ends", async () => {
      let body!: SseBody;
      const { url, server } = await serving((response) => (body = new SseBody({ response, headers })));
      try {
        const answer = await fetch(url); // resolves once the head arrived: nothing is written yet
        expect(answer.status).toBe(200);
        expect(answer.headers.get("content-type")).toBe("text/event-stream");
        const reader = answer.body!.getReader();
        await body.message('{"seq":1}', "1");
        await body.message("one\ntwo", "2");
        expect(Buffer.from((await reader.read()).value!).toString("utf8")).toBe(
          'data: {"seq":1}\nid: 1\n\ndata: one\ndata: two\nid: 2\n\n',
        );
        body.close();
        expect((await reader.read()).done).toBe(true);
      } finally {
        server.close();
      }
    });

    it("holds a writer once a client that does not read stops taking, and releases it and tells the stream when the client goes away", async () => {
      let body!: SseBody;
      const { url, server } = await serving((response) => (body = new SseBody({ response, headers, highWaterChars: 1024 })));
      try {
        let incoming!: IncomingMessage;
        const client = httpRequest(url, (response) => (incoming = response.pause()));
        client.end();
        await new Promise<void>((resolve) => client.once("response", () => resolve()));
        let cancelled = 0;
        body.onCancel(() => cancelled++);
        const chunk = "x".repeat(64 * 1024);
        let written = 0;
        let held: Promise<void> | undefined;
        // The socket's buffers take some megabytes; past them the body queues, then holds the writer.
        while (!held && written < 256 * 1024 * 1024) {
          const write = body.write(chunk);
          written += chunk.length;
          const state = await Promise.race([write.then(() => "done"), new Promise((resolve) => setTimeout(() => resolve("held"), 50))]);
          if (state === "held") held = write;
        }
        expect(held).toBeDefined();
        incoming.destroy();
        client.destroy();
        await held;
        await new Promise<void>((resolve) => (cancelled ? resolve() : body.onCancel(resolve)));
        expect(cancelled).toBe(1);
        expect(body.closed).toBe(true);
        await body.write("after the end"); // ignored, never held
      } finally {
        server.close();
      }
    });
  });
});
