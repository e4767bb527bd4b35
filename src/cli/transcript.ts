import type { HookboxEvent } from "../events/types.js";
import { formatUsd } from "../loop/usage-meter.js";
import { printable as p, printableLines } from "./terminal-text.js";

/** At most `max` characters of the value (JSON unless a string), control characters escaped. */
const short = (value: unknown, max = 160): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return p(text.length > max ? `${text.slice(0, max)}…` : text);
};

/** Shown only when something was used: a scripted model without `usage` reports none. */
function usageLine(usage: NonNullable<Extract<HookboxEvent, { type: "run-finished" }>["usage"]>): string {
  const cost = usage.costUsd > 0 ? `, ${formatUsd(usage.costUsd)}` : "";
  const cpu = usage.sandboxCpuMs ? `, sandbox CPU ${usage.sandboxCpuMs.toFixed(1)} ms` : "";
  return `${usage.inputTokens} in + ${usage.outputTokens} out tokens${cost}${cpu}`;
}

type HookDecision = Extract<HookboxEvent, { type: "hook-decision" }>;
type ToolError = { message: string; code?: string };

/**
 * The readable transcript of one run, for humans (`hookbox run` without --json, and the demo): one line or a few
 * per event. It remembers each call's arguments and outcome, so a hook's decision reads as what it did to them:
 * a rewrite names what changed, a result handed back unchanged says so, a failure a hook leaves failed says so.
 * Every text that came from a script, a tool, the model or the user is shown with its control characters escaped
 * (terminal-text.ts): nothing printed here can move the cursor, retitle the window or reorder what a person reads.
 */
export class Transcript {
  /** By call id, the latest: the arguments the call has now, and how its last attempt ended. */
  private readonly calls = new Map<string, { args?: unknown; result?: unknown; error?: ToolError }>();
  /** The prompt as the model will get it (after beforeRun rewrites). */
  private prompt?: string;

  line(event: HookboxEvent): string | undefined {
    this.remember(event);
    return this.describe(event);
  }

  private remember(event: HookboxEvent): void {
    if (event.type === "run-started") this.prompt = event.prompt;
    else if (event.type === "inference-finished") for (const call of event.toolCalls) this.calls.set(call.id, { args: call.args });
    else if (event.type === "tool-started") this.calls.set(event.callId, { args: event.args });
    else if (event.type === "tool-finished") {
      const call = this.calls.get(event.callId) ?? {};
      this.calls.set(event.callId, { args: call.args, result: event.result, ...(event.error ? { error: event.error } : {}) });
    }
  }

  private decision(event: HookDecision): string | undefined {
    const decision = event.decision;
    const action = typeof decision.action === "string" ? decision.action : undefined;
    if (action === "none") return undefined;
    const call = event.callId !== undefined ? this.calls.get(event.callId) : undefined;
    let shown: string;
    if (event.hook === "afterToolCall" && action === undefined) shown = afterToolCallEffect(decision, call);
    else if (action === "proceed" && decision.args !== undefined && !same(decision.args, call?.args)) {
      shown = `rewrite: args now ${short(decision.args)}`;
      if (call) call.args = decision.args;
    } else if (action === "proceed" && typeof decision.prompt === "string" && decision.prompt !== this.prompt) {
      shown = `rewrite: the model gets the prompt ${short(decision.prompt)}`;
      this.prompt = decision.prompt;
    } else {
      const detail = decision.reason ?? decision.message;
      shown = `${p(action ?? "proceed")}${detail !== undefined ? `: ${short(detail)}` : ""}`;
    }
    const where = event.callId !== undefined ? ` [${p(event.callId)}]` : "";
    const shadow = event.shadow ? " (shadow, not enforced)" : "";
    return `    ${p(event.script)}.${event.hook} → ${shown}${where}${shadow}`;
  }

  private describe(event: HookboxEvent): string | undefined {
    switch (event.type) {
      case "run-started":
        return `▶ run ${p(event.runId)} (session ${p(event.sessionId)})\n  user: ${printableLines(event.prompt, "        ")}`;
      case "inference-started":
        return `\n— inference ${event.iteration}`;
      case "inference-finished": {
        const lines = [];
        if (event.text) lines.push(`  model: ${printableLines(event.text, "         ")}`);
        for (const call of event.toolCalls) {
          const args = call.rawArgs !== undefined ? `unparsable: ${short(call.rawArgs)}` : short(call.args);
          lines.push(`  ${call.providerExecuted ? "provider ran" : "model calls"} ${p(call.name)}(${args}) [${p(call.id)}]`);
        }
        if (lines.length === 0) lines.push("  model: (no text)");
        const stopped = event.finishReason && STOPPED[event.finishReason];
        if (stopped) lines.push(`  model stopped: ${stopped}`);
        if (event.usage && (event.usage.inputTokens || event.usage.outputTokens)) lines.push(`  usage: ${usageLine(event.usage)}`);
        return lines.join("\n");
      }
      case "inference-retry":
        return event.fallback
          ? `  ↻ falling back to ${p(event.model)} (attempt ${event.attempt}) after: ${short(event.message)}`
          : `  ↻ model ${event.status ?? "network error"}: retrying ${p(event.model)} as attempt ${event.attempt} in ${event.delayMs} ms (${short(event.message, 100)})`;
      case "hook-decision":
        return this.decision(event);
      case "approval.requested":
        return `    ? approval needed for ${p(event.name)}(${short(event.args)}) [${p(event.callId)}]: ${p(event.reason)} (${p(event.script)}; ${event.pauseId}, until ${new Date(event.deadlineMs).toISOString()})`;
      case "approval.resolved": {
        const by = event.approvedBy ? ` by ${p(event.approvedBy)}` : "";
        const edited = event.args !== undefined ? ` with ${short(event.args)}` : "";
        return `    ${event.decision === "approved" ? "✓" : "✗"} ${event.decision}${by}${edited}${event.reason ? `: ${p(event.reason)}` : ""} [${p(event.callId)}]`;
      }
      case "tool-started":
        return `    ${event.origin} tool ${p(event.name)}(${short(event.args)}) attempt ${event.attempt}`;
      case "tool-finished": {
        const name = event.providerExecuted ? `${p(event.name)} (run by the provider)` : p(event.name);
        const took = event.providerExecuted ? "" : ` in ${event.durationMs} ms`;
        return event.error
          ? `    ✗ ${name} failed${took}: ${p(event.error.message)}`
          : `    ✓ ${name} → ${short(event.result)}${took ? ` (${event.durationMs} ms)` : ""}`;
      }
      case "tool-retry":
        return `    ↻ retry ${p(event.callId)} as attempt ${event.attempt} after ${event.backoffMs} ms`;
      case "context-restart":
        return `    ⟳ context restart "${p(event.restartType)}" ${event.applied ? "applied" : "refused"}`;
      case "context-trimmed": {
        const summary = event.summarized
          ? `, summarized by ${p(event.model ?? "the guard model")}`
          : event.summaryError
            ? ` (no summary: ${short(event.summaryError, 100)})`
            : "";
        return `  ✂ context: ${event.droppedMessages} earlier message(s) left out (${event.droppedBytes} bytes)${summary}; ${event.keptBytes} of ${event.budgetBytes} bytes kept`;
      }
      case "debugger.pause":
        return `  ⏸ paused ${event.phase} (${event.pauseId}); press Enter to continue`;
      case "debugger.continue":
        return `  ⏵ ${event.reason}`;
      case "log":
        return `    [${p(event.script)} ${event.level}] ${p(event.message)}`;
      case "run-interrupted":
        return `\n⏹ interrupted: ${p(event.reason)} after ${event.iterations} inference(s); the run is resumable`;
      case "run-resumed":
        return `⏵ resumed${event.node !== undefined ? ` on node ${p(event.node)}` : ""} from its last committed snapshot`;
      case "run-finished": {
        const used = event.usage && (event.usage.inputTokens || event.usage.outputTokens || event.usage.sandboxCpuMs);
        const usage = used ? `\n  usage: ${usageLine(event.usage!)}` : "";
        const stopped = event.finishReason && STOPPED[event.finishReason] ? ` (the last answer was ${STOPPED[event.finishReason]})` : "";
        return `\n■ ${event.status}${stopped}${event.errorCode ? ` (${p(event.errorCode)})` : ""}${event.reason ? `: ${p(event.reason)}` : ""} after ${event.iterations} inference(s)${event.text ? `\n  final answer: ${printableLines(event.text, "                ")}` : ""}${usage}`;
      }
    }
  }
}

/** Finish reasons a reader must not miss: the answer is not the model's whole, ordinary answer. */
const STOPPED: Partial<Record<string, string>> = {
  length: "cut off at the token limit",
  "content-filter": "refused or filtered by the provider",
  error: "stopped by an error",
  other: "stopped for a reason the provider did not name",
};

/** What an afterToolCall return (`{result?, error?}`) did to the call (docs/script-api.md, "What hooks may return"). */
function afterToolCallEffect(decision: Record<string, unknown>, call: { result?: unknown; error?: ToolError } | undefined): string {
  const hasResult = decision.result !== undefined;
  if (typeof decision.error === "string") return `fail: the model sees the error ${short(decision.error)}`;
  if (decision.error === null) return `error cleared: the model sees ${short(hasResult ? decision.result : (call?.result ?? null))}`;
  if (call?.error)
    return `the call stays failed (${short(call.error.message, 100)}): a result without error: null does not clear the error`;
  if (!hasResult) return "unchanged";
  if (same(decision.result, call?.result)) return "result unchanged";
  if (call) call.result = decision.result;
  return `rewrite: the model sees ${short(decision.result)}`;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
