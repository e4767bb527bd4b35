import type { Json } from "../turns/json.js";
import type { Block, Turn } from "../turns/turn.js";
import type { CallOutcome } from "./tool-call.js";
import { contextRestartDisabledKey, PayloadKeys } from "../turns/keys.gen.js";
import { newId } from "./ids.js";
import { TypedKeyError } from "../turns/typed-key.js";

/** Applies a tool's `context_restart_<suffix>` enrichment to the turn (mutating it). */
export type RestartHandler = (turn: Turn, restart: { suffix: string; item?: Json; callId: string }) => void | Promise<void>;

export interface RestartHandlers {
  /** Handlers by suffix (the plug-in seam). */
  bySuffix?: Record<string, RestartHandler>;
  /** The generic handler serves every suffix without its own handler; false turns it off. */
  generic?: boolean;
}

/** Appends the item as a context block and sets the suffix's disable flag so it is not fetched again. */
export const genericRestartHandler: RestartHandler = (turn, { suffix, item }) => {
  if (item !== undefined) {
    turn.blocks.push({
      id: newId("blk"),
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

/** Whether `suffix` can name a restart: the disable flag's key (keys.gen.ts) is the one owner of that rule. */
function isRestartSuffix(suffix: string): boolean {
  try {
    contextRestartDisabledKey(suffix);
    return true;
  } catch (error) {
    if (error instanceof TypedKeyError) return false;
    throw error;
  }
}

export function isRestartDisabled(turn: Turn, suffix: string): boolean {
  return contextRestartDisabledKey(suffix).find(turn.data) === true;
}

/**
 * Applies one restart to the turn, or refuses it (beyond the run's bound, already applied, no handler) with the
 * error result the model sees instead.
 */
export async function applyRestart(
  turn: Turn,
  restart: Extract<CallOutcome, { kind: "restart" }>,
  withinBound: boolean,
  handlers: RestartHandlers,
): Promise<{ ok: true } | { ok: false; block: Block }> {
  const refuse = (message: string) => ({
    ok: false as const,
    block: {
      id: newId("blk"),
      kind: "tool_use" as const,
      role: "tool",
      payload: { [PayloadKeys.id]: restart.callId, [PayloadKeys.error]: { message, code: "CONTEXT_RESTART" } as Json },
      metadata: {},
    },
  });
  // The suffix names the restart's disable flag in the turn's data: a tool's malformed one is refused like any other.
  if (!isRestartSuffix(restart.suffix))
    return refuse(
      `context restart refused: ${JSON.stringify(restart.suffix.slice(0, 80))} is not a restart type (context_restart_ then letters, digits, '_', '-' or '.')`,
    );
  if (!withinBound) return refuse(`context restart refused: the run's restart limit is reached`);
  if (isRestartDisabled(turn, restart.suffix)) return refuse(`context restart "${restart.suffix}" was already applied in this run`);
  const handler = restartHandlerFor(handlers, restart.suffix);
  if (!handler) return refuse(`no context restart handler for "${restart.suffix}"`);
  // No tool result is appended: the call itself leaves the transcript, the enrichment takes its place.
  turn.blocks = turn.blocks.filter((b) => b.id !== restart.blockId);
  await handler(turn, { suffix: restart.suffix, item: restart.item, callId: restart.callId });
  return { ok: true };
}
