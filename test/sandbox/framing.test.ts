import { spawn } from "node:child_process";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameReader, writeFrame } from "../../src/sandbox/wire/framing.js";

describe("worker pipe frames", () => {
  const messages = [
    { type: "call", seq: 1, args: '[{"text":"héllo ✓ 😀","q":"\\"quoted\\""}]', target: "beforeToolCall" },
    {
      type: "done",
      seq: 1,
      outcomes: [
        { type: "settled", callId: 1, value: "" },
        { type: "request", callId: 2, requestId: 1, op: "next", value: '{"a":"ü"}' },
      ],
      logs: [{ message: "x" }],
      cpuMs: 5,
    },
    { type: "bundle", hash: "h", code: "x".repeat(200_000), filename: "b.js" },
    { type: "ready", pid: 7 },
    // Big texts travel as blobs, small ones inside the header: mixed in one frame.
    { type: "call", seq: 2, args: JSON.stringify(["ü".repeat(5000)]), lazy: `{"big":"${"x".repeat(10_000)}"}`, target: "afterToolCall" },
    {
      type: "done",
      seq: 2,
      outcomes: [
        { type: "settled", callId: 3, value: `"${"é".repeat(3000)}"` },
        { type: "settled", callId: 4, value: '{"small":true}' },
      ],
      logs: [],
      cpuMs: 1,
    },
  ];

  it("round-trips messages, raw text fields included, however the pipe splits the bytes", () => {
    const bytes = Buffer.concat(messages.map((message) => encodeFrame(message)));
    for (const step of [1, 3, 7, 4096, bytes.length]) {
      const received: unknown[] = [];
      const reader = new FrameReader((message) => received.push(message));
      for (let at = 0; at < bytes.length; at += step) reader.push(bytes.subarray(at, at + step));
      expect(received).toEqual(messages);
    }
  });

  it("keeps its order over many frames of mixed sizes split at random points (scratch buffer reused)", () => {
    const many = Array.from({ length: 60 }, (_, i) => messages[i % messages.length]!);
    const bytes = Buffer.concat(many.map((message) => encodeFrame(message)));
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const received: unknown[] = [];
    const reader = new FrameReader((message) => received.push(message));
    for (let at = 0; at < bytes.length;) {
      const step = 1 + Math.floor(random() * (random() < 0.5 ? 100 : 150_000));
      reader.push(Buffer.from(bytes.subarray(at, at + step)));
      at += step;
    }
    expect(received).toEqual(many);
  });

  it("leaves the encoded message untouched", () => {
    const message = structuredClone(messages[1]!);
    encodeFrame(message);
    expect(message).toEqual(messages[1]);
  });

  it("writeFrame keeps every frame whole and in order when the pipe fills up (EAGAIN and partial writes)", async () => {
    // A child echoing its fd 3 back: 40 frames of ~300 KB written at once overflow the socket buffer.
    const child = spawn(
      process.execPath,
      ["-e", `const s = new (require("node:net").Socket)({ fd: 3, readable: true, writable: true }); s.pipe(s);`],
      { stdio: ["ignore", "ignore", "inherit", "pipe"] },
    );
    const pipe = child.stdio[3] as Socket;
    const sent = Array.from({ length: 40 }, (_, i) => ({ type: "done", seq: i, value: `${i}:` + "y".repeat(300_000 + i) }));
    const received: unknown[] = [];
    const done = new Promise<void>((resolve) => {
      const reader = new FrameReader((message) => {
        received.push(message);
        if (received.length === sent.length) resolve();
      });
      pipe.on("data", (chunk: Buffer) => reader.push(chunk));
    });
    for (const message of sent) writeFrame(pipe, encodeFrame(message));
    expect(pipe.writableLength).toBeGreaterThan(0); // some of it really went through the socket's queue
    await done;
    child.kill();
    expect(received).toEqual(sent);
  });
});
