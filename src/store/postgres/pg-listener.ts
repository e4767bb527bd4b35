import type { Client } from "pg";

/*
 * One LISTEN connection per node: commit notifications of run events (`hookbox_events`, payload the run id),
 * controls sent to a node (`hookbox_controls`, payload the node) and their replies (`hookbox_replies`, payload
 * the control id). Notifications only wake readers up (the tables are the truth), so when the connection drops
 * (a database restart) everyone is woken once it is back, and the readers read what they missed.
 */

type Handler = (payload: string) => void;

const CHANNELS = ["hookbox_events", "hookbox_controls", "hookbox_replies"] as const;
export type Channel = (typeof CHANNELS)[number];

export class PgListener {
  private client: Client | undefined;
  private readonly handlers = new Map<Channel, Set<Handler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private closed = false;
  private connecting: Promise<void> | undefined;
  private retryMs = 100;

  constructor(private readonly url: string) {}

  async start(): Promise<void> {
    await this.connect();
  }

  on(channel: Channel, handler: Handler): () => void {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Called after the connection came back (notifications may have been missed meanwhile). */
  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => this.reconnectHandlers.delete(handler);
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async open(): Promise<void> {
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: this.url, keepAlive: true, connectionTimeoutMillis: 5000 });
    client.on("notification", (message) => {
      const payload = message.payload ?? "";
      for (const handler of this.handlers.get(message.channel as Channel) ?? []) handler(payload);
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      client.end().catch(() => undefined);
      this.retry();
    };
    client.on("error", lost);
    client.on("end", lost);
    try {
      await client.connect();
      for (const channel of CHANNELS) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryMs = 100;
  }

  private retry(): void {
    if (this.closed) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 2000);
    setTimeout(() => {
      if (this.closed) return;
      this.connect().then(
        () => {
          for (const handler of this.reconnectHandlers) handler();
        },
        () => this.retry(),
      );
    }, wait).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
