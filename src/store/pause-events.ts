import type { HookboxEvent } from "../events/types.js";
import type { Json } from "../turns/json.js";

/** A pause as the store keeps it: a step pause, or an approval (phase "approval", its call in `pending`). */
export interface PauseChange {
  open?: { pauseId: string; phase: string; deadlineMs: number; pending: Json; openedMs: number };
  close?: { pauseId: string; reason: string };
}

/**
 * The one place that knows which events open and close a stored pause. Both kinds of pause are stored the
 * same way, so a client reading the run sees what it is waiting for, and an interrupted run's are closed.
 */
export function pauseChange(event: HookboxEvent): PauseChange | undefined {
  switch (event.type) {
    case "debugger.pause":
      return {
        open: {
          pauseId: event.pauseId,
          phase: event.phase,
          deadlineMs: event.deadlineMs,
          pending: event.pendingToolCalls,
          openedMs: event.timestampMs,
        },
      };
    case "debugger.continue":
      return { close: { pauseId: event.pauseId, reason: event.reason } };
    case "approval.requested":
      return {
        open: {
          pauseId: event.pauseId,
          phase: "approval",
          deadlineMs: event.deadlineMs,
          pending: [{ id: event.callId, name: event.name, args: event.args, reason: event.reason, script: event.script }],
          openedMs: event.timestampMs,
        },
      };
    case "approval.resolved":
      return { close: { pauseId: event.pauseId, reason: event.decision } };
    default:
      return undefined;
  }
}
