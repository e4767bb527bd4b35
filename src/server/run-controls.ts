import type { ClusterStore, ControlReply, RunControl } from "../store/cluster.js";
import type { SessionManager } from "../session/manager.js";
import type { ApprovalAnswer } from "../host/types.js";
import { jsonPath } from "../contracts/json-path.js";

/*
 * Continue, approve and cancel, from whichever node was asked to the run's owner: done here when the run
 * executes in this process, else carried to its owner through the cluster store and answered by it (the
 * owner's answer is the HTTP answer). One function applies a control to a live run, on either side.
 */

/** How long a node waits for the owner of a run to answer a control before answering 503. */
export const CONTROL_TIMEOUT_MS = 10_000;

/** Applies `control` to the run if it executes in this process; undefined when it does not. */
export function applyControl(manager: SessionManager, control: RunControl): ControlReply | undefined {
  const handle = manager.liveRun(control.runId);
  if (!handle) return undefined;
  switch (control.kind) {
    case "continue":
      return handle.continue(control.pauseId)
        ? { ok: true }
        : {
            ok: false,
            status: 404,
            code: "NOT_FOUND",
            message: `run ${control.runId} has no open pause ${control.pauseId}`,
            path: "$.pauseId",
          };
    case "approval": {
      const result = handle.answerApproval(control.pauseId, control.answer as unknown as ApprovalAnswer);
      if (result.ok) return { ok: true, value: { decision: result.decision } };
      if (result.code === "NOT_FOUND")
        return { ok: false, status: 404, code: "NOT_FOUND", message: `run ${control.runId} has no open approval ${control.pauseId}` };
      return { ok: false, status: 400, code: "VALIDATION", message: result.message, path: jsonPathOf(result.path) };
    }
    case "cancel":
      handle.cancel(control.reason);
      return { ok: true };
  }
}

/** The JSON path of an edited argument, as the approval route names it. */
function jsonPathOf(path: string[]): string {
  return jsonPath(["args", ...path]);
}

/**
 * The control's answer: from this process when the run is live here, else from its owner node (cluster stores);
 * undefined when no process runs it.
 */
export async function sendControl(
  manager: SessionManager,
  cluster: ClusterStore | undefined,
  control: RunControl,
): Promise<ControlReply | undefined> {
  return applyControl(manager, control) ?? (await cluster?.sendControl(control, CONTROL_TIMEOUT_MS));
}

/** Answers the controls other nodes send to this one, until the returned function is called. */
export function serveControls(manager: SessionManager, cluster: ClusterStore): () => void {
  return cluster.serveControls(
    async (control) =>
      applyControl(manager, control) ?? {
        ok: false,
        status: 409,
        code: "RUN_NOT_ACTIVE",
        message: `run ${control.runId} no longer executes on node ${cluster.node}`,
      },
  );
}
