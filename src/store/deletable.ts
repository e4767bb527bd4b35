import { HookboxError } from "../errors.js";

/** The same refusals in every store: a running run, or forks that keep their blocks in this session's log. */
export function refuseUndeletable(sessionId: string, runningRunId: string | undefined, forks: string[]): void {
  if (runningRunId !== undefined)
    throw new HookboxError("SESSION_BUSY", `session ${sessionId} has a running run (${runningRunId}): cancel it or wait for it to end`, {
      sessionId,
    });
  if (forks.length > 0)
    throw new HookboxError(
      "SESSION_FORKED",
      `session ${sessionId} has forks that keep their history in it (${forks.join(", ")}): delete them first`,
      { sessionId },
    );
}
