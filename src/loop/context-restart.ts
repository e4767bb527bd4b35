import type { Json } from "../turns/json.js";
import type { Turn } from "../turns/turn.js";
import { contextRestartDisabledKey, PayloadKeys } from "../turns/keys.gen.js";

/** Applies a tool's `context_restart_<suffix>` enrichment to the turn (mutating it). */
export type RestartHandler = (turn: Turn, restart: { suffix: string; item?: Json; callId: string }) => void | Promise<void>;

export interface RestartHandlers {
  /** Handlers by suffix (the plug-in seam). */
  bySuffix?: Record<string, RestartHandler>;
  /** The generic handler serves every suffix without its own handler; false turns it off. */
  generic?: boolean;
}

/** Appends the item as a context block and sets the suffix's disable flag so it is not fetched again. */
export const genericRestartHandler: RestartHandler = (turn, { suffix, item, callId }) => {
  if (item !== undefined) {
    turn.blocks.push({
      id: `context_${callId}`,
      kind: "context",
      role: "system",
      payload: { [PayloadKeys.restartType]: suffix, [PayloadKeys.item]: item },
      metadata: {},
    });
  }
  contextRestartDisabledKey(suffix).set(turn.data, true);
};

export function restartHandlerFor(handlers: RestartHandlers, suffix: string): RestartHandler | undefined {
  const own = handlers.bySuffix && Object.hasOwn(handlers.bySuffix, suffix) ? handlers.bySuffix[suffix] : undefined;
  if (own) return own;
  return handlers.generic === false ? undefined : genericRestartHandler;
}

export function isRestartDisabled(turn: Turn, suffix: string): boolean {
  return contextRestartDisabledKey(suffix).find(turn.data) === true;
}
