import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter, type SpanProcessor } from "@opentelemetry/sdk-trace";

/*
 * Spans batched per tenant (docs/observability.md, "One tenant's spans never push out another's"). Each tenant
 * gets a batch queue of its own, so a tenant that makes spans faster than the collector takes them drops
 * its own, never another's, and every export request carries one tenant's spans only, so a request a
 * collector refuses loses that tenant's spans alone. Requests share the exporter through a gate that lets a
 * few through at once and serves the tenants waiting in turn, so a busy tenant cannot queue ahead of a
 * quiet one (and the exporter's own limit on requests in flight, which fails a request past it, is never met).
 */

/** The span attribute every hookbox span carries, by which spans are batched. */
export const TENANT_ATTRIBUTE = "hookbox.tenant";

export interface TenantBatchingOptions {
  /** Spans one tenant may have waiting; past it that tenant's new spans are dropped, no one else's. */
  maxQueuePerTenant: number;
  /** Spans in one export request. */
  maxExportBatchSize: number;
  /** Tenants with a queue at once; to make room, the least recently active one is flushed and closed. */
  maxTenants: number;
  /** Export requests in flight at once, all tenants together; the others wait, served a tenant at a time. */
  maxExportsInFlight: number;
}

export class TenantSpanProcessor implements SpanProcessor {
  private readonly queues = new Map<string, BatchSpanProcessor>();
  private readonly gate: FairExportGate;

  constructor(
    exporter: SpanExporter,
    private readonly options: TenantBatchingOptions,
  ) {
    this.gate = new FairExportGate(exporter, options.maxExportsInFlight);
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    this.queueOf(String(span.attributes[TENANT_ATTRIBUTE] ?? "")).onEnd(span);
  }

  /** Sends what one tenant has waiting (a run that ended sends its tenant's spans, nobody else's). */
  flushTenant(tenant: string): Promise<void> {
    return this.queues.get(tenant)?.forceFlush() ?? Promise.resolve();
  }

  /** Sends every tenant's queue and waits until every request, earlier ones included, is answered. */
  async forceFlush(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.forceFlush().catch(() => undefined)));
    await this.gate.drained();
  }

  async shutdown(): Promise<void> {
    const queues = [...this.queues.values()];
    this.queues.clear();
    await Promise.all(queues.map((queue) => queue.shutdown().catch(() => undefined)));
    // A queue's shutdown waits for its last flush only: requests of earlier ones may still wait at the gate.
    await this.gate.drained();
    await this.gate.shutdown();
  }

  private queueOf(tenant: string): BatchSpanProcessor {
    const existing = this.queues.get(tenant);
    if (existing) {
      // Most recently active last: the first in the map is the one to close when room is needed.
      this.queues.delete(tenant);
      this.queues.set(tenant, existing);
      return existing;
    }
    if (this.queues.size >= this.options.maxTenants) {
      const [oldest, queue] = this.queues.entries().next().value!;
      this.queues.delete(oldest);
      void queue.shutdown().catch(() => undefined);
    }
    const queue = new BatchSpanProcessor({
      exporter: this.gate.forTenant(tenant),
      maxQueueSize: this.options.maxQueuePerTenant,
      maxExportBatchSize: this.options.maxExportBatchSize,
    });
    this.queues.set(tenant, queue);
    return queue;
  }
}

/** One exporter shared by every tenant's queue: at most `limit` requests in flight, the waiting tenants served in turn. */
class FairExportGate {
  private inFlight = 0;
  /** Requests waiting or in flight, and who waits for there to be none. */
  private outstanding = 0;
  private idle: (() => void)[] = [];
  /** Requests waiting, by tenant; the map's order is the turn (a tenant served goes to the back). */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(
    private readonly exporter: SpanExporter,
    private readonly limit: number,
  ) {}

  /** The exporter as one tenant's queue sees it; shutting it down leaves the shared one alone. */
  forTenant(tenant: string): SpanExporter {
    return {
      export: (spans, done) => this.enqueue(tenant, () => this.send(spans, done)),
      shutdown: async () => {},
      forceFlush: async () => {},
    };
  }

  shutdown(): Promise<void> {
    return this.exporter.shutdown();
  }

  /** Resolves once no request waits or is in flight. */
  drained(): Promise<void> {
    if (this.outstanding === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private enqueue(tenant: string, start: () => void): void {
    this.outstanding += 1;
    const queue = this.waiting.get(tenant);
    if (queue) queue.push(start);
    else this.waiting.set(tenant, [start]);
    this.next();
  }

  private send(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    let settled = false;
    const finish = (result: ExportResult) => {
      if (settled) return;
      settled = true;
      this.inFlight -= 1;
      this.outstanding -= 1;
      this.next();
      done(result);
      if (this.outstanding === 0) for (const resolve of this.idle.splice(0)) resolve();
    };
    try {
      this.exporter.export(spans, finish);
    } catch (error) {
      finish({ code: ExportResultCode.FAILED, error: error as Error });
    }
  }

  private next(): void {
    while (this.inFlight < this.limit && this.waiting.size > 0) {
      const [tenant, queue] = this.waiting.entries().next().value!;
      this.waiting.delete(tenant);
      const start = queue.shift()!;
      if (queue.length > 0) this.waiting.set(tenant, queue);
      this.inFlight += 1;
      start();
    }
  }
}
