/*
 * When the server's background work (the tenants' runtimes built after start, src/server/lazy-runtimes.ts) may
 * take its next step. Requests come first: a step starts once nothing has been in flight for `quietMs` (no
 * request being handled, no run executing in this process), so a client's next request, sent right after the
 * answer to its last, does not find a build in its way. A server that is never idle (a steady stream of runs, a
 * run paused for an approval for hours) must still build every tenant: a step also starts once it has waited
 * `(1 - share) / share` times as long as the step before it took (the first step starts at once), so the
 * background keeps at least `share` of the time. A stream that stays open (SSE) is not in flight: its run is, while it executes.
 */

export interface BackgroundTurnsOptions {
  /** Runs executing in this process now (a paused run counts: it holds its run open). */
  runsInFlight(): number;
  /** How long nothing must be in flight before a step starts, ms (default 10). */
  quietMs?: number;
  /** The least share of the time the steps get while the server is never idle (default 0.1). */
  share?: number;
  /** How often a step that waits looks again while something is in flight, ms (default 5). */
  pollMs?: number;
}

export class BackgroundTurns {
  private requests = 0;
  private lastActiveAt = performance.now();
  private lastStep = { tookMs: 0, endedAt: performance.now() };
  private readonly quietMs: number;
  private readonly share: number;
  private readonly pollMs: number;

  constructor(private readonly options: BackgroundTurnsOptions) {
    this.quietMs = options.quietMs ?? 10;
    this.share = options.share ?? 0.1;
    this.pollMs = options.pollMs ?? 5;
  }

  /** Handles one request: background steps wait while it is in flight. */
  async during<T>(handle: () => T | Promise<T>): Promise<T> {
    this.requests++;
    this.lastActiveAt = performance.now();
    try {
      return await handle();
    } finally {
      this.requests--;
      this.lastActiveAt = performance.now();
    }
  }

  /** Runs one background step in its turn: once the server is quiet, or once the step has waited its longest. */
  async step<T>(work: () => Promise<T>): Promise<T> {
    const latest = this.lastStep.endedAt + (this.lastStep.tookMs * (1 - this.share)) / this.share;
    for (;;) {
      const now = performance.now();
      const quietFor = this.quietForMs(now);
      if (quietFor >= this.quietMs || now >= latest) break;
      const wait = quietFor > 0 ? this.quietMs - quietFor : this.pollMs;
      // Unref'd: waiting for a turn never keeps a process alive.
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(wait, latest - now))).unref());
    }
    const startedAt = performance.now();
    try {
      return await work();
    } finally {
      const endedAt = performance.now();
      this.lastStep = { tookMs: endedAt - startedAt, endedAt };
    }
  }

  /** How long nothing has been in flight (0 while something is). */
  private quietForMs(now: number): number {
    if (this.requests > 0 || this.options.runsInFlight() > 0) {
      this.lastActiveAt = now;
      return 0;
    }
    return now - this.lastActiveAt;
  }
}
