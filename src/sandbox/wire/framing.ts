import { readSync, writeSync } from "node:fs";
import type { Socket } from "node:net";

/*
 * Host <-> worker frames on a dedicated pipe (fd 3 of the worker), in place of Node's IPC channel for
 * protocol messages: Node's channel JSON-encodes the whole message, so a 100 KB JSON text field is escaped
 * and unescaped once per direction. A frame is
 *   [u32 LE header bytes][u32 LE blob bytes][header: JSON][blobs: UTF-8 text, concatenated]
 * where the longer text fields (BLOB_FIELDS, from BLOB_MIN_CHARS on) travel raw in the blob section and the
 * header lists their byte lengths in `$blobs`, in the order they were taken out (the field itself holds
 * the marker 0). Small texts stay in the header: escaping them costs less than handling a blob.
 */

/** Text fields carried raw: call args and lazy results, resume values, bundle code, outcome values. */
const BLOB_FIELDS = ["args", "lazy", "value", "code"] as const;
/**
 * From this length a text field travels raw. A hook's payload (its JSON text is ~500 characters, a quote every
 * ~5) encodes and decodes in about half the time as a blob as escaped inside the header; a short outcome value
 * (`""`, a small object) costs less escaped than handled as a blob.
 */
export const BLOB_MIN_CHARS = 256;

function isBlob(text: unknown): text is string {
  return typeof text === "string" && text.length >= BLOB_MIN_CHARS;
}

function hasBlobs(target: Record<string, unknown>): boolean {
  // Indexed: this runs for every frame, and a for-of here allocates an iterator each time.
  for (let index = 0; index < BLOB_FIELDS.length; index++) if (isBlob(target[BLOB_FIELDS[index]!])) return true;
  return false;
}

function someHaveBlobs(outcomes: unknown): boolean {
  if (!Array.isArray(outcomes)) return false;
  for (let index = 0; index < outcomes.length; index++) if (hasBlobs(outcomes[index] as Record<string, unknown>)) return true;
  return false;
}

interface Blobbed {
  $blobs?: number[];
  outcomes?: Record<string, unknown>[];
  [key: string]: unknown;
}

function takeBlobs(target: Record<string, unknown>, blobs: string[], lengths: number[]): void {
  for (let index = 0; index < BLOB_FIELDS.length; index++) {
    const field = BLOB_FIELDS[index]!;
    const text = target[field];
    if (isBlob(text)) {
      blobs.push(text);
      lengths.push(Buffer.byteLength(text));
      target[field] = 0; // marker: the text is in the blob section
    }
  }
}

function putBlobs(target: Record<string, unknown>, read: () => string): void {
  for (let index = 0; index < BLOB_FIELDS.length; index++) {
    const field = BLOB_FIELDS[index]!;
    if (target[field] === 0) target[field] = read();
  }
}

/** Encodes one message as one frame. The message is not modified. */
export function encodeFrame(message: object): Buffer {
  if (!hasBlobs(message as Blobbed) && !someHaveBlobs((message as Blobbed).outcomes)) {
    const text = JSON.stringify(message);
    const frame = Buffer.allocUnsafe(8 + Buffer.byteLength(text));
    frame.writeUInt32LE(frame.length - 8, 0);
    frame.writeUInt32LE(0, 4);
    frame.write(text, 8);
    return frame;
  }
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

/** What a reader of untrusted frames (the host reading a worker) bounds, and whom it tells of a broken frame. */
export interface FrameReaderOptions {
  /** A frame announcing more bytes than this is a violation (default: no bound). */
  maxFrameBytes?: number;
  /** Called once, with what was wrong, when a frame is broken or too big; the reader then reads nothing more. */
  onViolation?: (reason: string) => void;
}

/**
 * Reassembles frames from pipe chunks; calls `onMessage` for each complete one, in order. It keeps no
 * reference to a chunk after push() returns, so callers may reuse their read buffer. Complete frames
 * are decoded straight from the chunk; a frame split across chunks is assembled in one scratch buffer that
 * is reused (a fresh 100 KB buffer per big message costs page faults, and concatenating chunks a copy).
 * With `onViolation`, a frame that is too big or does not decode stops the reader instead of throwing: the
 * writer (a worker running guest code) is not trusted to keep the format.
 */
export class FrameReader {
  private scratch = Buffer.alloc(0);
  private filled = 0;
  private broken = false;

  constructor(
    private readonly onMessage: (message: unknown) => void,
    private readonly options: FrameReaderOptions = {},
  ) {}

  push(chunk: Buffer): void {
    if (this.broken) return;
    let data = chunk;
    if (this.filled > 0) {
      this.reserve(this.filled + chunk.length);
      chunk.copy(this.scratch, this.filled);
      this.filled += chunk.length;
      data = this.scratch.subarray(0, this.filled);
    }
    let at = 0;
    while (data.length - at >= 8) {
      const total = 8 + data.readUInt32LE(at) + data.readUInt32LE(at + 4);
      if (total > (this.options.maxFrameBytes ?? Infinity)) {
        this.violation(`a frame of ${total} bytes, over the ${this.options.maxFrameBytes}-byte limit`);
        return;
      }
      if (data.length - at < total) {
        if (data !== chunk) this.reserve(total); // room for the whole frame: later chunks append without regrowing
        break;
      }
      const frame = data.subarray(at, at + total);
      at += total;
      let message: unknown;
      try {
        message = decodeFrame(frame);
      } catch (error) {
        if (this.options.onViolation === undefined) throw error;
        this.violation(`a broken frame (${(error as Error).message})`);
        return;
      }
      this.onMessage(message);
      if (this.broken) return;
    }
    const rest = data.length - at;
    if (rest === 0) {
      this.filled = 0;
      // Do not hold on to the memory of one huge frame.
      if (this.scratch.length > 1 << 20) this.scratch = Buffer.alloc(0);
    } else if (data === chunk) {
      this.filled = 0;
      this.reserve(Math.max(rest, rest >= 8 ? 8 + chunk.readUInt32LE(at) + chunk.readUInt32LE(at + 4) : 0));
      chunk.copy(this.scratch, 0, at);
      this.filled = rest;
    } else if (at > 0) {
      this.scratch.copyWithin(0, at, this.filled);
      this.filled = rest;
    }
  }

  /** Stops reading: what comes after a broken frame cannot be framed again. */
  stop(): void {
    this.broken = true;
    this.filled = 0;
    this.scratch = Buffer.alloc(0);
  }

  private violation(reason: string): void {
    this.stop();
    if (this.options.onViolation === undefined) throw new Error(reason);
    this.options.onViolation(reason);
  }

  /** Makes the scratch buffer hold at least `bytes`, keeping what it holds. */
  private reserve(bytes: number): void {
    if (this.scratch.length >= bytes) return;
    const grown = Buffer.allocUnsafe(Math.max(bytes, this.scratch.length * 2, 65536));
    this.scratch.copy(grown, 0, 0, this.filled);
    this.scratch = grown;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Decodes one whole frame; throws, saying what, when it does not follow the format. */
function decodeFrame(frame: Buffer): unknown {
  const headerBytes = frame.readUInt32LE(0);
  const blobBytes = frame.length - 8 - headerBytes;
  const header: unknown = JSON.parse(frame.toString("utf8", 8, 8 + headerBytes));
  if (!isRecord(header)) throw new Error("the header is not an object");
  // Most frames carry no blobs: nothing to check or take out then (no delete, which can slow the object down).
  if (header.$blobs === undefined && blobBytes === 0) return header;
  const lengths = header.$blobs ?? [];
  if (!Array.isArray(lengths)) throw new Error("$blobs is not a list of byte lengths");
  let sum = 0;
  for (let index = 0; index < lengths.length; index++) {
    const length: unknown = lengths[index];
    if (!Number.isSafeInteger(length) || (length as number) < 0) throw new Error("$blobs is not a list of byte lengths");
    sum += length as number;
  }
  if (sum !== blobBytes) throw new Error("the blob lengths do not add up to the blob section");
  delete header.$blobs;
  let at = 8 + headerBytes;
  let index = 0;
  const read = (): string => {
    const length = (lengths as number[])[index++];
    if (length === undefined) throw new Error("more blob markers than blobs");
    const text = frame.toString("utf8", at, at + length);
    at += length;
    return text;
  };
  if (lengths.length > 0) {
    putBlobs(header, read);
    if (Array.isArray(header.outcomes)) for (const outcome of header.outcomes as unknown[]) if (isRecord(outcome)) putBlobs(outcome, read);
  }
  return header;
}

/**
 * Writes one frame with a single write(2) when the socket has nothing queued (the pipe's fd is
 * non-blocking: this never waits), skipping the stream machinery on the hot path. Whatever could not be
 * written (EAGAIN, a partial write, an error) goes through the socket, after anything it already queued,
 * so order is kept and errors are reported by the socket as before.
 */
export function writeFrame(socket: Socket, frame: Buffer): void {
  const fd = socketFd(socket);
  if (socket.writableLength === 0 && fd !== undefined) {
    let written = 0;
    try {
      written = writeSync(fd, frame);
    } catch {
      // EAGAIN (full) or a real error: the socket takes it from here
    }
    if (written === frame.length) return;
    frame = frame.subarray(written);
  }
  socket.write(frame);
}

/** The (non-blocking, libuv-opened) fd under a pipe socket, for reads and writes that skip the stream. */
export function socketFd(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/**
 * Reads what the non-blocking `fd` holds now, without waiting: the byte count, 0 when nothing is there yet
 * (EAGAIN), or -1 at the end of the stream or on an error (which the socket on the fd reports). Bytes read
 * here must go to the same reader as the socket's, on the same thread, so order is kept.
 */
export function readAvailable(fd: number, buffer: Buffer): number {
  // An empty read throws EAGAIN: without a stack trace that costs ~5 us instead of ~8.5.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    const bytes = readSync(fd, buffer, 0, buffer.length, null);
    return bytes > 0 ? bytes : -1;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EAGAIN" ? 0 : -1;
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}
