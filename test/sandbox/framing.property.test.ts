import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { BLOB_MIN_CHARS, encodeFrame, FrameReader } from "../../src/sandbox/wire/framing.js";
import { propertyParameters } from "../helpers/property.js";

/*
 * The frame decoder reads what a worker writes, and a worker may be the attacker's: for any bytes, split
 * anywhere, it never throws (it reports a violation, once, and reads nothing more), never buffers more
 * than its cap, and what it does emit is an object; valid frames come back as they went, however split.
 */

const MAX_FRAME = 64 * 1024;

/** Text that goes raw into the blob section when long enough, with multi-byte characters. */
const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", minLength: BLOB_MIN_CHARS - 2, maxLength: BLOB_MIN_CHARS + 2 }),
  fc.string({ unit: "binary", minLength: 2048, maxLength: 6000 }),
);

/** Messages shaped like the protocol's, with the fields that travel as blobs. */
const message = fc.record(
  {
    type: fc.constantFrom("done", "call", "resume", "bundle", "ready"),
    seq: fc.nat(),
    args: text,
    lazy: text,
    value: text,
    code: text,
    outcomes: fc.array(
      fc.record({ type: fc.constantFrom("settled", "request"), callId: fc.nat(), value: text }, { requiredKeys: ["type"] }),
      {
        maxLength: 3,
      },
    ),
    logs: fc.array(fc.record({ message: fc.string() }), { maxLength: 2 }),
  },
  { requiredKeys: ["type"] },
);

/** Cuts `bytes` at the given points (sorted, within range) into chunks. */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let at = 0;
  for (const point of [...points, bytes.length]) {
    chunks.push(Buffer.from(bytes.subarray(at, point)));
    at = point;
  }
  return chunks;
}

/** Feeds `chunks` to a capped reader; returns what it emitted and the violations it reported. */
function read(chunks: Buffer[]): { messages: unknown[]; violations: string[] } {
  const messages: unknown[] = [];
  const violations: string[] = [];
  const reader = new FrameReader((decoded) => messages.push(decoded), {
    maxFrameBytes: MAX_FRAME,
    onViolation: (reason) => violations.push(reason),
  });
  for (const chunk of chunks) reader.push(chunk);
  return { messages, violations };
}

/**
 * The format as docs/sandbox.md states it, decoded the slow and obvious way from the whole byte string: the
 * frames before the first broken or oversized one, and whether there was one. The decoder must agree,
 * however the bytes were split.
 */
function reference(bytes: Buffer): { messages: unknown[]; broken: boolean } {
  const messages: unknown[] = [];
  const isRecord = (value: unknown): value is Record<string, unknown> =>
    value !== null && typeof value === "object" && !Array.isArray(value);
  for (let at = 0; bytes.length - at >= 8;) {
    const headerBytes = bytes.readUInt32LE(at);
    const blobBytes = bytes.readUInt32LE(at + 4);
    if (8 + headerBytes + blobBytes > MAX_FRAME) return { messages, broken: true };
    if (bytes.length - at < 8 + headerBytes + blobBytes) break;
    let header: unknown;
    try {
      header = JSON.parse(bytes.toString("utf8", at + 8, at + 8 + headerBytes));
    } catch {
      return { messages, broken: true };
    }
    if (!isRecord(header)) return { messages, broken: true };
    const lengths = header.$blobs ?? [];
    if (!Array.isArray(lengths) || !lengths.every((length) => Number.isSafeInteger(length) && length >= 0))
      return { messages, broken: true };
    if (lengths.reduce((sum: number, length: number) => sum + length, 0) !== blobBytes) return { messages, broken: true };
    delete header.$blobs;
    const blobs = lengths.map((length: number, index: number) => {
      const start = at + 8 + headerBytes + lengths.slice(0, index).reduce((sum: number, each: number) => sum + each, 0);
      return bytes.toString("utf8", start, start + length);
    });
    let next = 0;
    const holders = lengths.length > 0 ? [header, ...(Array.isArray(header.outcomes) ? header.outcomes.filter(isRecord) : [])] : [];
    for (const holder of holders)
      for (const field of ["args", "lazy", "value", "code"])
        if (holder[field] === 0) {
          if (next >= blobs.length) return { messages, broken: true };
          holder[field] = blobs[next++];
        }
    messages.push(header);
    at += 8 + headerBytes + blobBytes;
  }
  return { messages, broken: false };
}

describe("the frame decoder (property)", () => {
  it("gives back any sequence of valid frames, however the pipe splits them", () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 12 }), (messages, cuts) => {
        const frames = messages.map((each) => encodeFrame(each));
        fc.pre(frames.every((frame) => frame.length <= MAX_FRAME));
        const { messages: decoded, violations } = read(split(Buffer.concat(frames), cuts));
        expect(violations).toEqual([]);
        expect(decoded).toEqual(messages);
      }),
      propertyParameters(150),
    );
  });

  it("never throws on arbitrary or mutated bytes: it emits what the format says, or reports one violation and stops", () => {
    const valid = fc
      .array(message, { minLength: 1, maxLength: 3 })
      .map((messages) => Buffer.concat(messages.map((each) => encodeFrame(each))));
    const mutated = fc
      .tuple(valid, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.nat())
      .map(([bytes, flips, cutAt]) => {
        const copy = Buffer.from(bytes);
        for (const [at, value] of flips) copy[at % copy.length] = value;
        // Sometimes also truncated, or with junk after the frames.
        return cutAt % 3 === 0
          ? copy.subarray(0, cutAt % (copy.length + 1))
          : cutAt % 3 === 1
            ? Buffer.concat([copy, Buffer.from([cutAt & 255, 0, 0])])
            : copy;
      });
    const random = fc.uint8Array({ maxLength: 4096 }).map((bytes) => Buffer.from(bytes));
    /** Frame headers that announce lengths around the cap and the 32-bit edges. */
    const lengths = fc
      .tuple(
        fc.constantFrom(0, 1, 7, MAX_FRAME - 9, MAX_FRAME - 8, MAX_FRAME - 7, 0x7fffffff, 0xfffffff0, 0xffffffff),
        fc.constantFrom(0, 1, 2, MAX_FRAME, 0xffffffff),
        fc.uint8Array({ maxLength: 64 }),
      )
      .map(([header, blobs, rest]) => {
        const head = Buffer.alloc(8);
        head.writeUInt32LE(header, 0);
        head.writeUInt32LE(blobs, 4);
        return Buffer.concat([head, Buffer.from(rest)]);
      });
    fc.assert(
      fc.property(fc.oneof(mutated, random, lengths), fc.array(fc.nat(), { maxLength: 8 }), (bytes, cuts) => {
        const { messages, violations } = read(split(bytes, cuts));
        expect(violations.length).toBeLessThanOrEqual(1);
        const expected = reference(bytes);
        expect(messages).toEqual(expected.messages);
        expect(violations.length === 1).toBe(expected.broken);
      }),
      propertyParameters(400),
    );
  });

  it("refuses a frame over its cap from its first 8 bytes, before buffering it", () => {
    fc.assert(
      fc.property(fc.integer({ min: MAX_FRAME - 7, max: 0xffffffff }), fc.nat({ max: 0xffffffff }), (header, blobs) => {
        const head = Buffer.alloc(8);
        head.writeUInt32LE(header, 0);
        head.writeUInt32LE(blobs, 4);
        const { messages, violations } = read([head]);
        expect(messages).toEqual([]);
        expect(violations).toHaveLength(1);
        expect(violations[0]).toContain("over the");
      }),
      propertyParameters(100),
    );
  });
});
