import type { HookboxEvent } from "../events/types.js";
import { formatUsd } from "../loop/usage-meter.js";

const short = (value: unknown, max = 160): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

/** Shown only when something was used: a scripted model without `usage` reports none. */
function usageLine(usage: NonNullable<Extract<HookboxEvent, { type: "run-finished" }>["usage"]>): string {
  const cost = usage.costUsd > 0 ? `, ${formatUsd(usage.costUsd)}` : "";
  const cpu = usage.sandboxCpuMs ? `, sandbox CPU ${usage.sandboxCpuMs.toFixed(1)} ms` : "";
  return `${usage.inputTokens} in + ${usage.outputTokens} out tokens${cost}${cpu}`;
}

/** One readable line per event, for humans (`hookbox run` without --json, and the demo). */
export function describeEvent(event: HookboxEvent): string | undefined {
  switch (event.type) {
    case "run-started":
      return `▶ run ${event.runId} (session ${event.sessionId})\n  user: ${event.prompt}`;
    case "inference-started":
      return `\n— inference ${event.iteration}`;
    case "inference-finished": {
      const lines = [];
      if (event.text) lines.push(`  model: ${event.text}`);
      for (const call of event.toolCalls) lines.push(`  model calls ${call.name}(${short(call.args)}) [${call.id}]`);
      if (lines.length === 0) lines.push("  model: (no text)");
      if (event.usage && (event.usage.inputTokens || event.usage.outputTokens)) lines.push(`  usage: ${usageLine(event.usage)}`);
      return lines.join("\n");
    }
    case "inference-retry":
      return event.fallback
        ? `  ↻ falling back to ${event.model} (attempt ${event.attempt}) after: ${short(event.message)}`
        : `  ↻ model ${event.status ?? "network error"}: retrying ${event.model} as attempt ${event.attempt} in ${event.delayMs} ms (${short(event.message, 100)})`;
    case "hook-decision": {
      const action = String(event.decision.action ?? "transform");
      if (action === "none") return undefined;
      const rewritten = action === "transform" ? { result: event.decision.result, error: event.decision.error } : undefined;
      const detail =
        event.decision.reason ??
        event.decision.message ??
        (typeof event.decision.prompt === "string" ? `prompt rewritten to ${short(event.decision.prompt)}` : undefined) ??
        (rewritten ? `the model sees ${short(rewritten.error ?? rewritten.result)}` : "");
      const where = event.callId !== undefined ? ` [${event.callId}]` : "";
      return `    ${event.script}.${event.hook} → ${action}${detail ? `: ${short(detail)}` : ""}${where}`;
    }
    case "approval.requested":
      return `    ? approval needed for ${event.name}(${short(event.args)}) [${event.callId}]: ${event.reason} (${event.script}; ${event.pauseId}, until ${new Date(event.deadlineMs).toISOString()})`;
    case "approval.resolved": {
      const edited = event.args !== undefined ? ` with ${short(event.args)}` : "";
      return `    ${event.decision === "approved" ? "✓" : "✗"} ${event.decision}${edited}${event.reason ? `: ${event.reason}` : ""} [${event.callId}]`;
    }
    case "tool-started":
      return `    ${event.origin} tool ${event.name}(${short(event.args)}) attempt ${event.attempt}`;
    case "tool-finished":
      return event.error
        ? `    ✗ ${event.name} failed in ${event.durationMs} ms: ${event.error.message}`
        : `    ✓ ${event.name} → ${short(event.result)} (${event.durationMs} ms)`;
    case "tool-retry":
      return `    ↻ retry ${event.callId} as attempt ${event.attempt} after ${event.backoffMs} ms`;
    case "context-restart":
      return `    ⟳ context restart "${event.restartType}" ${event.applied ? "applied" : "refused"}`;
    case "debugger.pause":
      return `  ⏸ paused ${event.phase} (${event.pauseId}); press Enter to continue`;
    case "debugger.continue":
      return `  ⏵ ${event.reason}`;
    case "log":
      return `    [${event.script} ${event.level}] ${event.message}`;
    case "run-finished": {
      const used = event.usage && (event.usage.inputTokens || event.usage.outputTokens || event.usage.sandboxCpuMs);
      const usage = used ? `\n  usage: ${usageLine(event.usage!)}` : "";
      return `\n■ ${event.status}${event.errorCode ? ` (${event.errorCode})` : ""}${event.reason ? `: ${event.reason}` : ""} after ${event.iterations} inference(s)${event.text ? `\n  final answer: ${event.text}` : ""}${usage}`;
    }
  }
}
