import type { CommonContext, UserContext } from "../contracts/context.js";
import { PayloadKeys, type FinishReason } from "../turns/keys.gen.js";
import type { Turn } from "../turns/turn.js";
import type { EventLog } from "./event-log.js";
import type { RunResult } from "../host/types.js";
import type { HookChain } from "./hook-chain.js";
import { newId } from "./ids.js";

/** How a run ends, before the loop adds the turn and the inference count. */
export type Ending = Omit<RunResult, "turn" | "iterations">;

/**
 * beforeRun, once per run before the first inference (a resumed run already passed it). A rewrite replaces
 * the text of the run's user block, so the model sees it; `userContext.originalUserRequest` keeps what the
 * user wrote. Returns the ending when the run must not start.
 */
export async function guardRunStart(
  turn: Turn,
  hooks: HookChain,
  payload: CommonContext & { prompt: string; userContext: UserContext },
): Promise<Ending | undefined> {
  const outcome = await hooks.beforeRun({ ...payload, phase: "beforeRun" });
  if (outcome.kind === "deny") return { status: "aborted", reason: outcome.reason, errorCode: outcome.errorCode };
  if (outcome.prompt === payload.prompt) return undefined;
  // Blocks are immutable once in a turn: the rewritten message replaces the user block.
  for (let i = turn.blocks.length - 1; i >= 0; i--) {
    const block = turn.blocks[i];
    if (block.kind !== "user") continue;
    turn.blocks[i] = { ...block, payload: { ...block.payload, [PayloadKeys.text]: outcome.prompt } };
    break;
  }
  return undefined;
}

/**
 * beforeFinish, each time an inference makes no tool calls. `continue` appends the hook's message as a user
 * block and asks for another inference, at most `maxFinishContinues` times per run and never past
 * `maxIterations`; a continue beyond those bounds is logged and the run finishes with the answer it has.
 */
export class FinishGuard {
  private continues = 0;

  constructor(
    private readonly hooks: HookChain,
    private readonly events: EventLog,
    private readonly bounds: { maxFinishContinues: number; maxIterations: number },
  ) {}

  /** "continue" when the loop must run another inference; otherwise how the run ends. */
  async check(
    turn: Turn,
    answer: { text: string; finishReason?: FinishReason },
    iterations: number,
    context: CommonContext,
  ): Promise<"continue" | Ending> {
    const { maxFinishContinues, maxIterations } = this.bounds;
    const outcome = await this.hooks.beforeFinish({
      ...context,
      phase: "beforeFinish",
      text: answer.text,
      ...(answer.finishReason !== undefined ? { finishReason: answer.finishReason } : {}),
      iterations,
      continues: this.continues,
      maxFinishContinues,
    });
    if (outcome.kind === "finish") return { status: "completed" };
    if (outcome.kind === "abort")
      return { status: "aborted", reason: outcome.reason, ...(outcome.errorCode ? { errorCode: outcome.errorCode } : {}) };
    if (outcome.kind === "failed") return { status: "failed", reason: outcome.reason, errorCode: outcome.errorCode };
    const refusal =
      this.continues >= maxFinishContinues
        ? `maxFinishContinues (${maxFinishContinues}) is used up`
        : iterations >= maxIterations
          ? `maxIterations (${maxIterations}) is reached`
          : undefined;
    if (refusal) {
      this.events.emit({
        type: "log",
        script: outcome.script,
        level: "warn",
        message: `beforeFinish asked to continue, but ${refusal}: the run finishes`,
      });
      return { status: "completed" };
    }
    this.continues += 1;
    turn.blocks.push({ id: newId("blk"), kind: "user", role: "user", payload: { [PayloadKeys.text]: outcome.message }, metadata: {} });
    return "continue";
  }
}
