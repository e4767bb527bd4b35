/** Characters an event stream queues for a connection that has not taken them before its writer waits. */
export const SSE_HIGH_WATER_CHARS = 64 * 1024;

/**
 * The body of an event stream. What the route writes is queued and handed to the HTTP server as one chunk per
 * read: the messages written in one turn of the event loop (a page of stored events, the events of a phase
 * committed together) go out in one socket write, where a stream per message would make one write, and several
 * promise hops, for each. What is queued is handed over in the turn after the connection asks for more (or after
 * the write, when it already asked). A writer waits only once more than `highWaterChars` are queued that the connection has not
 * taken (a slow reader): the stream then holds that much, never the run.
 */
export class SseBody {
  readonly stream: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private queued: string[] = [];
  private queuedChars = 0;
  /** The connection asked for more and got nothing yet. */
  private wanted = false;
  private handOverPending = false;
  private ended = false;
  private drained: (() => void)[] = [];
  private readonly cancelListeners: (() => void)[] = [];

  constructor(private readonly highWaterChars = SSE_HIGH_WATER_CHARS) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: () => {
          this.wanted = true;
          if (this.queuedChars > 0) this.scheduleHandOver();
        },
        cancel: () => {
          this.ended = true;
          this.queued = [];
          this.queuedChars = 0;
          this.release();
          for (const listener of this.cancelListeners) listener();
        },
      },
      { highWaterMark: 0 },
    );
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
    if (this.ended) return Promise.resolve();
    this.queued.push(text);
    this.queuedChars += text.length;
    if (this.wanted) this.scheduleHandOver();
    if (this.queuedChars <= this.highWaterChars) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  /** One SSE message: `id:` when given, `data:` lines of `data` (a line break in it starts another `data:` line). */
  message(data: string, id?: string): Promise<void> {
    const lines = /[\r\n]/.test(data) ? data.split(/\r\n|\r|\n/).join("\ndata: ") : data;
    return this.write(id === undefined ? `data: ${lines}\n\n` : `data: ${lines}\nid: ${id}\n\n`);
  }

  /** Ends the stream after what is queued. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.queuedChars > 0) this.handOver();
    this.controller.close();
    this.release();
  }

  /** In the next turn: what is written until then goes in the same chunk. */
  private scheduleHandOver(): void {
    if (this.handOverPending) return;
    this.handOverPending = true;
    setImmediate(() => {
      this.handOverPending = false;
      if (this.wanted && this.queuedChars > 0 && !this.ended) this.handOver();
    });
  }

  private handOver(): void {
    this.controller.enqueue(Buffer.from(this.queued.length === 1 ? this.queued[0] : this.queued.join(""), "utf8"));
    this.queued = [];
    this.queuedChars = 0;
    this.wanted = false;
    this.release();
  }

  private release(): void {
    const waiting = this.drained;
    this.drained = [];
    for (const resolve of waiting) resolve();
  }
}
