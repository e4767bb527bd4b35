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

/**
 * One readable line per event, for humans (`hookbox run` without --json, and the demo). Every text that came
 * from a script, a tool, the model or the user is shown with its control characters escaped (terminal-text.ts):
 * nothing printed here can move the cursor, retitle the window or reorder what a person reads.
 */
export function describeEvent(event: HookboxEvent): string | undefined {
  switch (event.type) {
    case "run-started":
      return `▶ run ${p(event.runId)} (session ${p(event.sessionId)})\n  user: ${printableLines(event.prompt, "        ")}`;
    case "inference-started":
      return `\n— inference ${event.iteration}`;
    case "inference-finished": {
      const lines = [];
      if (event.text) lines.push(`  model: ${printableLines(event.text, "         ")}`);
      for (const call of event.toolCalls) lines.push(`  model calls ${p(call.name)}(${short(call.args)}) [${p(call.id)}]`);
      if (lines.length === 0) lines.push("  model: (no text)");
      if (event.usage && (event.usage.inputTokens || event.usage.outputTokens)) lines.push(`  usage: ${usageLine(event.usage)}`);
      return lines.join("\n");
    }
    case "inference-retry":
      return event.fallback
        ? `  ↻ falling back to ${p(event.model)} (attempt ${event.attempt}) after: ${short(event.message)}`
        : `  ↻ model ${event.status ?? "network error"}: retrying ${p(event.model)} as attempt ${event.attempt} in ${event.delayMs} ms (${short(event.message, 100)})`;
    case "hook-decision": {
      const action = String(event.decision.action ?? "transform");
      if (action === "none") return undefined;
      const rewritten = action === "transform" ? { result: event.decision.result, error: event.decision.error } : undefined;
      const detail =
        event.decision.reason ??
        event.decision.message ??
        (typeof event.decision.prompt === "string" ? `prompt rewritten to ${short(event.decision.prompt)}` : undefined) ??
        (rewritten ? `the model sees ${short(rewritten.error ?? rewritten.result)}` : "");
      const where = event.callId !== undefined ? ` [${p(event.callId)}]` : "";
      return `    ${p(event.script)}.${event.hook} → ${p(action)}${detail ? `: ${short(detail)}` : ""}${where}`;
    }
    case "approval.requested":
      return `    ? approval needed for ${p(event.name)}(${short(event.args)}) [${p(event.callId)}]: ${p(event.reason)} (${p(event.script)}; ${event.pauseId}, until ${new Date(event.deadlineMs).toISOString()})`;
    case "approval.resolved": {
      const edited = event.args !== undefined ? ` with ${short(event.args)}` : "";
      return `    ${event.decision === "approved" ? "✓" : "✗"} ${event.decision}${edited}${event.reason ? `: ${p(event.reason)}` : ""} [${p(event.callId)}]`;
    }
    case "tool-started":
      return `    ${event.origin} tool ${p(event.name)}(${short(event.args)}) attempt ${event.attempt}`;
    case "tool-finished":
      return event.error
        ? `    ✗ ${p(event.name)} failed in ${event.durationMs} ms: ${p(event.error.message)}`
        : `    ✓ ${p(event.name)} → ${short(event.result)} (${event.durationMs} ms)`;
    case "tool-retry":
      return `    ↻ retry ${p(event.callId)} as attempt ${event.attempt} after ${event.backoffMs} ms`;
    case "context-restart":
      return `    ⟳ context restart "${p(event.restartType)}" ${event.applied ? "applied" : "refused"}`;
    case "debugger.pause":
      return `  ⏸ paused ${event.phase} (${event.pauseId}); press Enter to continue`;
    case "debugger.continue":
      return `  ⏵ ${event.reason}`;
    case "log":
      return `    [${p(event.script)} ${event.level}] ${p(event.message)}`;
    case "run-finished": {
      const used = event.usage && (event.usage.inputTokens || event.usage.outputTokens || event.usage.sandboxCpuMs);
      const usage = used ? `\n  usage: ${usageLine(event.usage!)}` : "";
      return `\n■ ${event.status}${event.errorCode ? ` (${p(event.errorCode)})` : ""}${event.reason ? `: ${p(event.reason)}` : ""} after ${event.iterations} inference(s)${event.text ? `\n  final answer: ${printableLines(event.text, "                ")}` : ""}${usage}`;
    }
  }
}
