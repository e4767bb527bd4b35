/*
 * One job at a time, tenants taking turns: each tenant's jobs wait in its own line, and the next job comes from
 * the tenant after the one served last. A tenant that queues many slow jobs then makes another tenant wait for
 * about one of them, not for all.
 */
export class TenantTurns {
  /** Each tenant's waiting jobs; the map's order is the order of turns (a served tenant moves to the back). */
  private readonly lines = new Map<string, (() => Promise<void>)[]>();
  private busy = false;

  /** Runs `job` in `tenant`'s turn; resolves or rejects as it does. */
  run<T>(tenant: string, job: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let line = this.lines.get(tenant);
      if (line === undefined) this.lines.set(tenant, (line = []));
      line.push(() => job().then(resolve, reject));
      this.next();
    });
  }

  private next(): void {
    if (this.busy) return;
    const turn = this.lines.entries().next();
    if (turn.done) return;
    const [tenant, line] = turn.value;
    const job = line.shift()!;
    this.lines.delete(tenant);
    if (line.length > 0) this.lines.set(tenant, line);
    this.busy = true;
    void job().finally(() => {
      this.busy = false;
      this.next();
    });
  }
}
