import { useState } from "preact/hooks";
import { api } from "../api.js";
import { href } from "../router.js";
import { shortId, time } from "../format.js";
import type { RunListItem } from "../types.js";
import { Problem, StatusBadge, useLoad } from "./common.js";

const STATUSES = ["", "running", "completed", "failed", "aborted", "cancelled", "interrupted"];

/** The tenant's runs, latest first (GET /v1/runs), filtered by status. */
export function RunsPage() {
  const [status, setStatus] = useState("");
  const runs = useLoad(() => api<{ runs: RunListItem[] }>("GET", `/v1/runs?limit=100${status ? `&status=${status}` : ""}`), [status], 3000);
  return (
    <section>
      <h1>Runs</h1>
      <label>
        Status{" "}
        <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
          {STATUSES.map((value) => (
            <option key={value} value={value}>
              {value || "any"}
            </option>
          ))}
        </select>
      </label>
      <Problem text={runs.error} />
      <table class="list">
        <thead>
          <tr>
            <th>Run</th>
            <th>Status</th>
            <th>Prompt</th>
            <th>Started</th>
            <th>Session</th>
          </tr>
        </thead>
        <tbody>
          {(runs.value?.runs ?? []).map((run) => (
            <tr key={run.runId}>
              <td>
                <a href={href.run(run.runId)} title={run.runId}>
                  {shortId(run.runId)}
                </a>
              </td>
              <td>
                <StatusBadge status={run.status} />
              </td>
              <td class="prompt">{run.prompt}</td>
              <td>{time(run.startedMs)}</td>
              <td>
                <a href={href.session(run.sessionId)} title={run.sessionId}>
                  {shortId(run.sessionId)}
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
