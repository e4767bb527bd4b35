import type { Json, JsonObject } from "../turns/json.js";
import type { ErrorCode, FinishReason, RunStatus } from "../turns/keys.gen.js";
import type { CodeOrigin } from "../contracts/context.js";
import type { RunUsage } from "../host/usage.js";
import type { ModelRetry } from "../loop/model-call.js";

/** Fields every event carries; `seq` is gap-free from 1 within a run. */
export interface EventBase {
  seq: number;
  timestampMs: number;
  sessionId: string;
  inferenceId: string;
}

export type ApprovalDecision = "approved" | "rejected" | "timeout" | "cancelled";

/** How a run ended (`run-finished.status`), or `interrupted`: cut off, and resumable (`run-interrupted`). */
export type FinalStatus = RunStatus | "interrupted";

/** A call an inference asked for, as events and pauses show it. */
export type CallSummary = {
  id: string;
  name: string;
  args: JsonObject;
  /** The model's argument text when it was not a JSON object (`args` is then `{}`). */
  rawArgs?: string;
  /** The provider ran the call itself; the host only observes it. */
  providerExecuted?: true;
};

export type EventBody =
  | { type: "run-started"; prompt: string; runId: string }
  | { type: "inference-started"; iteration: number }
  | {
      type: "inference-finished";
      iteration: number;
      text?: string;
      toolCalls: CallSummary[];
      /** Why the model stopped (absent when a middleware answered without calling the model). */
      finishReason?: FinishReason;
      /** This inference's tokens and cost (absent in events stored before usage was recorded). */
      usage?: RunUsage;
    }
  | ({ type: "inference-retry"; iteration: number } & ModelRetry)
  /** `callId` names the tool call; run hooks (beforeRun, beforeFinish) have none. */
  | {
      type: "hook-decision";
      hook: string;
      script: string;
      callId?: string;
      decision: JsonObject;
      /** The script's version when it came from a deployment. */
      version?: number;
      /** The script's bundle hash (every sandboxed script). */
      bundleHash?: string;
      /** A shadow script's decision: recorded, never enforced. */
      shadow?: true;
      /** A beforeToolCall hook asked again about arguments it had not let through (rewritten, edited or a retry's). */
      recheck?: true;
    }
  | { type: "tool-started"; callId: string; name: string; args: JsonObject; attempt: number; origin: CodeOrigin }
  | {
      type: "tool-finished";
      callId: string;
      name: string;
      attempt: number;
      durationMs: number;
      result?: Json;
      error?: { message: string; code?: string };
      /** The provider ran the call; result or error is the provider's. */
      providerExecuted?: true;
    }
  | { type: "tool-retry"; callId: string; attempt: number; backoffMs: number }
  | { type: "context-restart"; callId: string; restartType: string; applied: boolean }
  /** Before an inference: the oldest messages left the model's context (src/loop/context-window.ts). */
  | ({ type: "context-trimmed"; iteration: number } & ContextTrim)
  | {
      type: "debugger.pause";
      pauseId: string;
      phase: "after_inference" | "after_tools";
      deadlineMs: number;
      pendingToolCalls: CallSummary[];
    }
  | { type: "debugger.continue"; pauseId: string; reason: "continued" | "timeout" | "cancelled" | "disabled" }
  | {
      type: "approval.requested";
      pauseId: string;
      callId: string;
      name: string;
      args: JsonObject;
      reason: string;
      script: string;
      deadlineMs: number;
    }
  | {
      type: "approval.resolved";
      pauseId: string;
      callId: string;
      decision: ApprovalDecision;
      /** The arguments approved (the edited ones when the reviewer edited them). */
      args?: JsonObject;
      /** The reviewer's reason (approve or reject), or why the approval timed out. */
      reason?: string;
      /** Who approved, when the answer said (`approvedBy`). */
      approvedBy?: string;
    }
  | { type: "log"; script: string; tenant?: string; level: "debug" | "info" | "warn" | "error"; message: string }
  | CapabilityEvent
  /**
   * The run was cut off before its end (its process or node stopped, a drain, a lost lease): not final. A resume
   * or a takeover goes on after it with `run-resumed`; `run-finished` still comes once, at the run's real end.
   */
  | { type: "run-interrupted"; reason: string; iterations: number }
  /** The run goes on after an interruption, from its last committed snapshot (`node`: the cluster node that took it). */
  | { type: "run-resumed"; node?: string; iterations: number }
  | {
      type: "run-finished";
      /** Final: `run-finished` comes once per run. (Stores written before `run-interrupted` existed hold `interrupted` here.) */
      status: RunStatus;
      reason?: string;
      errorCode?: ErrorCode | string;
      text?: string;
      /** A completed run: why its last inference stopped (`length` or `content-filter` mean a cut or refused answer). */
      finishReason?: FinishReason;
      iterations: number;
      /** The whole run's tokens and cost, and the CPU its sandboxed scripts used. */
      usage?: RunUsage & { sandboxCpuMs?: number };
    };

/** One ctx.fetch / ctx.kv / ctx.model.generate request of a script, refused ones included (docs/capabilities.md). */
export interface CapabilityEvent {
  type: "capability";
  kind: "fetch" | "kv" | "model";
  script: string;
  ok: boolean;
  durationMs: number;
  errorCode?: string;
  /** fetch: the method, the last URL tried (after redirects) and the final status. */
  method?: string;
  url?: string;
  status?: number;
  /** kv: the operation and its key. */
  op?: string;
  key?: string;
  /** model: the guard model's id, its tokens and their cost (counted in the run's usage and budget). */
  model?: string;
  usage?: { inputTokens: number; outputTokens: number; costUsd: number };
  /**
   * A count, not one request: this script's refusals of this kind past the run's spent count, after the first
   * (which has an event of its own). One such event per script and kind, when the run ends.
   */
  refusals?: number;
}

/** What a `context-trimmed` event says was left out of the model's context (src/loop/context-window.ts). */
export interface ContextTrim {
  /** Messages and blocks left out by this trim, and their size (characters of JSON text, and estimated tokens). */
  droppedMessages: number;
  droppedBlocks: number;
  droppedBytes: number;
  droppedTokens: number;
  /** Messages left out of the session's context so far, this trim's included. */
  totalDroppedMessages: number;
  /** The turn's size after the trim, and the budget, in characters of JSON text. */
  keptBytes: number;
  budgetBytes: number;
  /** A summary of what was left out took its place (made by `model`, for `usage`). */
  summarized: boolean;
  model?: string;
  usage?: RunUsage;
  /** Why there is no summary although the policy asks for one (the note stands in for it). */
  summaryError?: string;
}

export type HookboxEvent = EventBase & EventBody;
export type EventType = HookboxEvent["type"];

/**
 * A piece of the model's answer as it streams in, for live readers only (docs/events.md, "Live text"): it is
 * never stored and has no `seq`, so `Last-Event-ID` and every stored reader count stored events alone; the
 * `inference-finished` of its iteration keeps the whole text. A reader that joins mid-answer first gets the answer
 * so far in one delta (`sofar: true`); one that joins after it sees that text instead.
 */
export interface TextDeltaEvent {
  type: "text-delta";
  iteration: number;
  delta: string;
  /** True on the first delta a reader joining mid-answer gets: `delta` is the whole answer so far, not a piece. */
  sofar?: true;
  timestampMs: number;
  sessionId: string;
  inferenceId: string;
}

/** What a live reader that asked for text deltas reads: the stored events, with the deltas between them. */
export type LiveEvent = HookboxEvent | TextDeltaEvent;
