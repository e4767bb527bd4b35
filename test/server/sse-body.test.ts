import { describe, expect, it } from "vitest";
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
    const body = new SseBody(10);
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

  it("ends after what is queued; a connection that goes away releases a held writer and tells the stream", async () => {
    const closing = new SseBody();
    void closing.write("last");
    closing.close();
    const closingReader = closing.stream.getReader();
    expect(text((await closingReader.read()).value)).toBe("last");
    expect((await closingReader.read()).done).toBe(true);

    const body = new SseBody(1);
    let cancelled = 0;
    body.onCancel(() => cancelled++);
    const held = body.write("more than one character");
    await body.stream.cancel();
    await held;
    expect(cancelled).toBe(1);
    expect(body.closed).toBe(true);
    await body.write("after the end"); // ignored, never held
  });
});
