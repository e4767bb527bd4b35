import type { JsonObject, RunEvent } from "./types.js";

/*
 * A run as the page shows it, built from its events as they come: the stored events in seq order, the text
 * the model is writing now (from text deltas, until its inference finishes), and what is open (a step pause,
 * approvals). Pure data: the views render it.
 */

export interface Timeline {
  events: RunEvent[];
  /** Text deltas of the inference in progress, by iteration (dropped when it finishes or is retried). */
  writing: { iteration: number; text: string } | undefined;
  finished: RunEvent | undefined;
  pause: { pauseId: string; phase: string; deadlineMs: number } | undefined;
  approvals: OpenApprovalOfRun[];
}

export interface OpenApprovalOfRun {
  pauseId: string;
  callId: string;
  name: string;
  args: JsonObject;
  reason: string;
  script: string;
  deadlineMs: number;
}

export const emptyTimeline: Timeline = { events: [], writing: undefined, finished: undefined, pause: undefined, approvals: [] };

export function addEvents(timeline: Timeline, batch: RunEvent[]): Timeline {
  let { events, writing, finished, pause, approvals } = timeline;
  const stored: RunEvent[] = [];
  for (const event of batch) {
    if (event.seq === undefined) {
      if (event.type !== "text-delta") continue;
      const iteration = event.iteration as number;
      const delta = String(event.delta ?? "");
      // A `sofar` delta is the whole answer so far (the stream joined or rejoined mid-answer): it replaces the text.
      const continues = writing?.iteration === iteration && event.sofar !== true;
      writing = continues ? { iteration, text: writing!.text + delta } : { iteration, text: delta };
      continue;
    }
    stored.push(event);
    switch (event.type) {
      case "inference-finished":
        if (writing?.iteration === event.iteration) writing = undefined;
        break;
      case "inference-retry":
        // The next attempt's text starts over.
        if (writing?.iteration === event.iteration) writing = undefined;
        break;
      case "debugger.pause":
        pause = { pauseId: String(event.pauseId), phase: String(event.phase), deadlineMs: Number(event.deadlineMs) };
        break;
      case "debugger.continue":
        if (pause?.pauseId === event.pauseId) pause = undefined;
        break;
      case "approval.requested":
        approvals = [
          ...approvals,
          {
            pauseId: String(event.pauseId),
            callId: String(event.callId),
            name: String(event.name),
            args: (event.args ?? {}) as JsonObject,
            reason: String(event.reason ?? ""),
            script: String(event.script ?? ""),
            deadlineMs: Number(event.deadlineMs),
          },
        ];
        break;
      case "approval.resolved":
        approvals = approvals.filter((approval) => approval.pauseId !== event.pauseId);
        break;
      case "run-finished":
        finished = event;
        writing = undefined;
        pause = undefined;
        approvals = [];
        break;
      case "run-started":
      case "inference-started":
        // A resumed run goes on after an interrupted end.
        if (finished?.status === "interrupted") finished = undefined;
        break;
    }
  }
  if (stored.length) events = [...events, ...stored];
  return { events, writing, finished, pause, approvals };
}

/** Every kind of event the page knows, in the order the filter lists them. */
export const EVENT_KINDS = [
  "run-started",
  "inference-started",
  "inference-finished",
  "inference-retry",
  "hook-decision",
  "approval.requested",
  "approval.resolved",
  "tool-started",
  "tool-finished",
  "tool-retry",
  "context-restart",
  "debugger.pause",
  "debugger.continue",
  "capability",
  "log",
  "run-finished",
] as const;

/** One line that says what an event is about; everything is text (the view never renders it as markup). */
export function summary(event: RunEvent): string {
  const e = event as Record<string, unknown>;
  const json = (value: unknown) => JSON.stringify(value);
  switch (event.type) {
    case "run-started":
      return `prompt: ${String(e.prompt)}`;
    case "inference-started":
      return `inference ${String(e.iteration)}`;
    case "inference-finished": {
      const calls = (e.toolCalls as { name: string; args: unknown }[] | undefined) ?? [];
      const usage = e.usage as { inputTokens?: number; outputTokens?: number } | undefined;
      const parts = [
        e.text !== undefined ? String(e.text) : undefined,
        calls.length ? `calls ${calls.map((call) => `${call.name}(${json(call.args)})`).join(", ")}` : undefined,
        e.finishReason ? `finish: ${String(e.finishReason)}` : undefined,
        usage ? `${usage.inputTokens ?? 0} in / ${usage.outputTokens ?? 0} out tokens` : undefined,
      ];
      return parts.filter(Boolean).join(" · ");
    }
    case "inference-retry":
      return `attempt ${String(e.attempt)} in ${String(e.delayMs)} ms${e.status ? ` after ${String(e.status)}` : ""}: ${String(e.message)}${e.fallback ? " (fallback model)" : ""}`;
    case "hook-decision": {
      const decision = (e.decision ?? {}) as { action?: string; reason?: string };
      const version = e.version !== undefined ? ` v${String(e.version)}` : "";
      return `${String(e.hook)} · ${String(e.script)}${version} · ${decision.action ?? json(decision)}${decision.reason ? `: ${decision.reason}` : ""}${e.shadow ? " (shadow)" : ""}${e.recheck ? " (recheck)" : ""}`;
    }
    case "approval.requested":
      return `${String(e.name)}(${json(e.args)}) asked by ${String(e.script)}: ${String(e.reason)}`;
    case "approval.resolved":
      return `${String(e.decision)}${e.args ? ` with ${json(e.args)}` : ""}${e.reason ? `: ${String(e.reason)}` : ""}${e.approvedBy ? ` by ${String(e.approvedBy)}` : ""}`;
    case "tool-started":
      return `${String(e.name)}(${json(e.args)}) attempt ${String(e.attempt)} (${String(e.origin)})`;
    case "tool-finished": {
      const error = e.error as { message?: string; code?: string } | undefined;
      const outcome = error ? `error ${error.code ?? ""} ${error.message ?? ""}`.trim() : `result ${json(e.result)}`;
      return `${String(e.name)} in ${String(e.durationMs)} ms: ${outcome}`;
    }
    case "tool-retry":
      return `call ${String(e.callId)}: attempt ${String(e.attempt)} after ${String(e.backoffMs)} ms`;
    case "context-restart":
      return `${String(e.restartType)} ${e.applied ? "applied" : "refused"}`;
    case "debugger.pause": {
      const pending = (e.pendingToolCalls as { name: string }[] | undefined) ?? [];
      return `paused ${String(e.phase).replace("_", " ")}${pending.length ? `, next: ${pending.map((call) => call.name).join(", ")}` : ""}`;
    }
    case "debugger.continue":
      return String(e.reason);
    case "capability":
      return `${String(e.kind)} ${[e.method, e.url, e.op, e.key, e.model]
        .filter((v) => v !== undefined)
        .map(String)
        .join(" ")} ${e.ok ? "ok" : `refused ${String(e.errorCode ?? "")}`} (${String(e.script)})`;
    case "log":
      return `${String(e.script)} ${String(e.level)}: ${String(e.message)}`;
    case "run-finished": {
      const spent = usageText(e.usage);
      return `${String(e.status)}${e.errorCode ? ` ${String(e.errorCode)}` : ""}${e.reason ? `: ${String(e.reason)}` : ""}${e.text !== undefined ? ` · ${String(e.text)}` : ""}${spent ? ` · ${spent}` : ""}`;
    }
    default:
      return json(event);
  }
}

/** What a run spent, as the budgets count it: tokens, cost and the sandbox's CPU (a run-finished's `usage`). */
export function usageText(usage: unknown): string {
  if (!usage || typeof usage !== "object") return "";
  const { inputTokens, outputTokens, costUsd, sandboxCpuMs } = usage as Record<string, unknown>;
  const parts = [`${Number(inputTokens ?? 0)} in / ${Number(outputTokens ?? 0)} out tokens`];
  if (typeof costUsd === "number" && costUsd > 0) parts.push(`$${costUsd.toFixed(4)}`);
  if (typeof sandboxCpuMs === "number") parts.push(`${sandboxCpuMs} ms sandbox CPU`);
  return parts.join(", ");
}
