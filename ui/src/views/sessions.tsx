import { useState } from "preact/hooks";
import { api } from "../api.js";
import { go, href } from "../router.js";
import { shortId, time } from "../format.js";
import type { SessionSummary } from "../types.js";
import { describe, Problem, StatusBadge, useLoad } from "./common.js";

export function Sessions() {
  const sessions = useLoad(() => api<{ sessions: SessionSummary[] }>("GET", "/v1/sessions"), [], 5000);
  const [problem, setProblem] = useState<string | undefined>();
  const create = async () => {
    try {
      const { sessionId } = await api<{ sessionId: string }>("POST", "/v1/sessions", {});
      go(href.session(sessionId));
    } catch (error) {
      setProblem(describe(error));
    }
  };
  const list = [...(sessions.value?.sessions ?? [])].reverse();
  return (
    <section>
      <div class="title-row">
        <h1>Sessions</h1>
        <button type="button" onClick={create}>
          New session
        </button>
      </div>
      <Problem text={problem ?? sessions.error} />
      {list.length === 0 && !sessions.loading ? <p>No sessions yet: start one with "New session".</p> : null}
      <table class="list">
        <thead>
          <tr>
            <th>Session</th>
            <th>Status</th>
            <th>Created</th>
            <th>Runs</th>
            <th>Last run</th>
          </tr>
        </thead>
        <tbody>
          {list.map((session) => (
            <tr key={session.id}>
              <td>
                <a href={href.session(session.id)} title={session.id}>
                  {shortId(session.id)}
                </a>
              </td>
              <td>
                <StatusBadge status={session.status} />
              </td>
              <td>{time(session.createdMs)}</td>
              <td>{session.runs}</td>
              <td>
                {session.lastRun ? (
                  <>
                    <a href={href.run(session.lastRun.id)} class="prompt">
                      {session.lastRun.prompt}
                    </a>{" "}
                    <span class="last-run-status">({session.lastRun.status})</span>
                  </>
                ) : (
                  "none"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
