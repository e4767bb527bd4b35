import type { ServerResponse } from "node:http";
import { atEndOfTurn } from "../session/end-of-turn.js";

/** Characters an event stream queues for a connection that has not taken them before its writer waits. */
export const SSE_HIGH_WATER_CHARS = 64 * 1024;

/** What a writer that may go on is handed (one promise for every such write). */
const GO_ON: Promise<void> = Promise.resolve();

/** Where the chunks go: a web stream the HTTP server reads, or Node's response written directly. */
interface Sink {
  /** Sends one chunk; false when the connection wants no more until it asks (`wanted` again). */
  send(chunk: Buffer): boolean;
  end(): void;
}

export interface SseBodyOptions {
  /** Characters queued for the connection before a writer waits (default SSE_HIGH_WATER_CHARS). */
  highWaterChars?: number;
  /** Node's response to write to, with `headers` (status 200); absent, the body is read as a web stream (`stream`). */
  response?: ServerResponse;
  headers?: Record<string, string>;
}

/**
 * The body of an event stream. What the route writes is queued and handed to the connection as one chunk per
 * turn: the messages written in one turn of the event loop (a page of stored events, the events of a phase
 * committed together) go out in one socket write, where a stream per message would make one write, and several
 * promise hops, for each. What is queued is handed over at the end of the turn in which the connection asks for
 * more (or of the write's turn, when it already asked). A writer waits only once more than `highWaterChars` are queued that the
 * connection has not taken (a slow reader): the stream then holds that much, never the run.
 *
 * The body is read as a web stream (`stream`, the Response body of any runtime), or written to Node's response
 * itself (`response`): no web stream's reader and promises per chunk, and the head goes out with the first chunk.
 */
export class SseBody {
  private readonly highWaterChars: number;
  private readonly webStream: ReadableStream<Uint8Array> | undefined;
  private sink!: Sink;
  private queued: string[] = [];
  private queuedChars = 0;
  /** The connection asked for more and got nothing yet. */
  private wanted = false;
  private handOverPending = false;
  private ended = false;
  private drained: (() => void)[] = [];
  private readonly cancelListeners: (() => void)[] = [];

  constructor(options: SseBodyOptions = {}) {
    this.highWaterChars = options.highWaterChars ?? SSE_HIGH_WATER_CHARS;
    const { response } = options;
    if (response) {
      this.webStream = undefined;
      this.onResponse(response, options.headers ?? {});
      return;
    }
    this.webStream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.sink = {
            send: (chunk) => {
              controller.enqueue(chunk);
              return false; // the stream's reader pulls again when it wants more
            },
            end: () => controller.close(),
          };
        },
        pull: () => this.want(),
        cancel: () => this.cancelled(),
      },
      { highWaterMark: 0 },
    );
  }

  /**
   * Written to Node's response: the head (status 200, `headers`) goes out with the first chunk when that is
   * written in the turn the stream opens, else alone at the end of that turn (a client waits for the head).
   */
  private onResponse(response: ServerResponse, headers: Record<string, string>): void {
    this.wanted = true; // a Node response takes writes until write() says it is full
    let sent = false; // (headersSent is true from writeHead on, before anything went out)
    this.sink = {
      send: (chunk) => {
        sent = true;
        return response.write(chunk);
      },
      end: () => response.end(),
    };
    response.writeHead(200, headers);
    response.on("drain", () => this.want());
    // Gone before the stream ended: the reader closed the connection (or it broke).
    response.on("close", () => this.cancelled());
    response.on("error", () => this.cancelled());
    if (response.destroyed) queueMicrotask(() => this.cancelled());
    atEndOfTurn(() => {
      if (sent || this.ended || response.destroyed) return;
      if (this.queuedChars > 0) this.handOver();
      else response.flushHeaders();
    });
  }

  /** The web stream to answer with (only for `new SseBody()`). */
  get stream(): ReadableStream<Uint8Array> {
    if (!this.webStream) throw new Error("this event stream is written to Node's response, not read as a web stream");
    return this.webStream;
  }

  /** True once the stream was closed, or the connection went away. */
  get closed(): boolean {
    return this.ended;
  }

  /** Called once when the connection goes away before the stream was closed. */
  onCancel(listener: () => void): void {
    this.cancelListeners.push(listener);
  }

  /**
   * Queues `text`; resolves at once while the connection keeps up, or once it took what was queued when more
   * than `highWaterChars` wait for it. Writing after the end does nothing.
   */
  write(text: string): Promise<void> {
    return this.enqueue(text) ? GO_ON : this.drain();
  }

  /** One SSE message: `id:` when given, `data:` lines of `data` (a line break in it starts another `data:` line). */
  message(data: string, id?: string | number): Promise<void> {
    return this.write(sseMessage(data, id));
  }

  /**
   * The same message, for a writer that goes on without a promise while it may: false once more than
   * `highWaterChars` wait for the connection, and the writer is to wait for `drain()` before the next.
   */
  queueMessage(data: string, id?: string | number): boolean {
    return this.enqueue(sseMessage(data, id));
  }

  /** Resolves once no more than `highWaterChars` wait for the connection (at once when none do, or after the end). */
  drain(): Promise<void> {
    if (this.ended || this.queuedChars <= this.highWaterChars) return GO_ON;
    return new Promise((resolve) => this.drained.push(resolve));
  }

  /** Queues `text` (nothing after the end); false when more than `highWaterChars` now wait for the connection. */
  private enqueue(text: string): boolean {
    if (this.ended) return true;
    this.queued.push(text);
    this.queuedChars += text.length;
    if (this.wanted) this.scheduleHandOver();
    return this.queuedChars <= this.highWaterChars;
  }

  /** Ends the stream after what is queued. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.queuedChars > 0) this.handOver();
    this.sink.end();
    this.release();
  }

  /** The connection takes more. */
  private want(): void {
    this.wanted = true;
    if (this.queuedChars > 0) this.scheduleHandOver();
  }

  /** The connection went away before the stream was closed. */
  private cancelled(): void {
    if (this.ended) return;
    this.ended = true;
    this.queued = [];
    this.queuedChars = 0;
    this.release();
    for (const listener of this.cancelListeners) listener();
  }

  /** At the end of this turn: what is written until then goes in the same chunk. */
  private scheduleHandOver(): void {
    if (this.handOverPending) return;
    this.handOverPending = true;
    atEndOfTurn(this.handOverAtEndOfTurn);
  }

  private readonly handOverAtEndOfTurn = (): void => {
    this.handOverPending = false;
    if (this.wanted && this.queuedChars > 0 && !this.ended) this.handOver();
  };

  private handOver(): void {
    const chunk = Buffer.from(this.queued.length === 1 ? this.queued[0] : this.queued.join(""), "utf8");
    this.queued = [];
    this.queuedChars = 0;
    this.wanted = this.sink.send(chunk);
    this.release();
  }

  private release(): void {
    const waiting = this.drained;
    this.drained = [];
    for (const resolve of waiting) resolve();
  }
}

/** An SSE message's text: `data:` lines of `data` (a line break in it starts another `data:` line), then `id:` when given. */
function sseMessage(data: string, id: string | number | undefined): string {
  const lines = /[\r\n]/.test(data) ? data.split(/\r\n|\r|\n/).join("\ndata: ") : data;
  return id === undefined ? `data: ${lines}\n\n` : `data: ${lines}\nid: ${id}\n\n`;
}
