/*
 * Host <-> worker frames on a dedicated pipe (fd 4 of the worker), replacing Node's IPC channel for
 * protocol messages: Node's channel JSON-encodes the whole message, so a 100 KB JSON text field is escaped
 * and unescaped once per direction. A frame is
 *   [u32 LE header bytes][u32 LE blob bytes][header: JSON][blobs: UTF-8 text, concatenated]
 * where the big text fields (BLOB_FIELDS) travel raw in the blob section and the header lists their byte
 * lengths in `$blobs`, in the order they were taken out (the field itself holds the marker 0).
 */

/** Text fields carried raw: call args, resume values, bundle code, outcome values. */
const BLOB_FIELDS = ["args", "value", "code"] as const;

interface Blobbed {
  $blobs?: number[];
  outcomes?: Record<string, unknown>[];
  [key: string]: unknown;
}

function takeBlobs(target: Record<string, unknown>, blobs: string[], lengths: number[]): void {
  for (const field of BLOB_FIELDS) {
    const text = target[field];
    if (typeof text === "string" && text.length > 0) {
      blobs.push(text);
      lengths.push(Buffer.byteLength(text));
      target[field] = 0; // marker: the text is in the blob section
    }
  }
}

function putBlobs(target: Record<string, unknown>, read: () => string): void {
  for (const field of BLOB_FIELDS) {
    if (target[field] === 0) target[field] = read();
  }
}

/** Encodes one message as one frame. The message is not modified. */
export function encodeFrame(message: object): Buffer {
  const header: Blobbed = { ...(message as Blobbed) };
  const blobs: string[] = [];
  const lengths: number[] = [];
  takeBlobs(header, blobs, lengths);
  if (Array.isArray(header.outcomes)) {
    header.outcomes = header.outcomes.map((outcome) => {
      const copy = { ...outcome };
      takeBlobs(copy, blobs, lengths);
      return copy;
    });
  }
  header.$blobs = lengths;
  const headerText = JSON.stringify(header);
  const headerBytes = Buffer.byteLength(headerText);
  let blobBytes = 0;
  for (const length of lengths) blobBytes += length;
  const frame = Buffer.allocUnsafe(8 + headerBytes + blobBytes);
  frame.writeUInt32LE(headerBytes, 0);
  frame.writeUInt32LE(blobBytes, 4);
  let at = 8 + frame.write(headerText, 8);
  for (const blob of blobs) at += frame.write(blob, at);
  return frame;
}

/** Reassembles frames from pipe chunks; calls `onMessage` for each complete one, in order. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly onMessage: (message: unknown) => void) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 8) {
      let buffer = this.chunks[0]!;
      if (buffer.length < 8) buffer = this.flatten();
      const total = 8 + buffer.readUInt32LE(0) + buffer.readUInt32LE(4);
      if (this.buffered < total) return;
      if (buffer.length < total) buffer = this.flatten();
      const frame = buffer.subarray(0, total);
      if (buffer.length === total) this.chunks.shift();
      else this.chunks[0] = buffer.subarray(total);
      this.buffered -= total;
      this.onMessage(decodeFrame(frame));
    }
  }

  private flatten(): Buffer {
    const whole = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [whole];
    return whole;
  }
}

function decodeFrame(frame: Buffer): unknown {
  const headerBytes = frame.readUInt32LE(0);
  const header = JSON.parse(frame.toString("utf8", 8, 8 + headerBytes)) as Blobbed;
  const lengths = header.$blobs ?? [];
  delete header.$blobs;
  let at = 8 + headerBytes;
  let index = 0;
  const read = (): string => {
    const length = lengths[index++] ?? 0;
    const text = frame.toString("utf8", at, at + length);
    at += length;
    return text;
  };
  if (lengths.length > 0) {
    putBlobs(header, read);
    if (Array.isArray(header.outcomes)) for (const outcome of header.outcomes) putBlobs(outcome, read);
  }
  return header;
}
