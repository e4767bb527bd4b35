import type { HookPayload } from "../contracts/context.js";
import type { HookName } from "../turns/keys.gen.js";
import type { EventBody } from "../events/types.js";
import { HookChain } from "./hook-chain.js";
import type { HookProvider } from "./hook-provider.js";
import type { ChainVerdict } from "../host/types.js";

/**
 * Shadow scripts: candidate versions that see every payload the active chain sees and decide nothing.
 * Each payload starts a shadow chain at once, beside the active one, and the call does not wait for it:
 * the shadow scripts live in a sandbox of their own (their own isolate, limits and worker quarantine), so a
 * loop, a throw or a memory bomb there costs the run nothing. Their decisions become `hook-decision
 * {shadow: true}` events and shadow verdicts. Before the run finishes, `settle` waits for shadow chains
 * still in flight at most `waitMs` (their own wall limit plus a margin); later ones are dropped (neither
 * emitted nor recorded).
 */
export class ShadowHooks {
  private readonly chain: HookChain;
  private readonly pending = new Set<Promise<void>>();
  private closed = false;

  constructor(
    providers: HookProvider[],
    events: { emit(body: EventBody): unknown },
    private readonly onVerdict: ((verdict: ChainVerdict) => void) | undefined,
  ) {
    const guarded = { emit: (body: EventBody) => (this.closed ? undefined : events.emit(body)) };
    this.chain = new HookChain(providers, guarded, {
      shadow: true,
      onVerdict: (verdict) => {
        if (!this.closed) this.onVerdict?.(verdict);
      },
    });
  }

  observe(hook: HookName, payload: HookPayload): void {
    if (this.closed) return;
    const evaluation = (this.chain[hook] as (p: HookPayload) => Promise<unknown>).call(this.chain, payload).then(
      () => undefined,
      () => undefined,
    );
    this.pending.add(evaluation);
    void evaluation.finally(() => this.pending.delete(evaluation));
  }

  /** Waits for shadow chains in flight, at most `waitMs`; after it nothing a shadow does is emitted or recorded. */
  async settle(waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (this.pending.size > 0 && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([...this.pending, new Promise((resolve) => (timer = setTimeout(resolve, deadline - Date.now())))]);
      clearTimeout(timer);
    }
    this.closed = true;
  }
}
