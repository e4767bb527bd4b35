import { randomUUID } from "node:crypto";
import type { RunRecord, SessionSummary, Store } from "../store/types.js";
import type { Turn } from "../turns/turn.js";
import { onePerTick } from "./one-per-tick.js";

/*
 * GET /v1/sessions/:id and SessionManager.describe: the session and one page of its runs. Only the session's
 * latest run carries its turn (that turn continues every earlier one, so the conversation is there once),
 * and that turn travels as the stored JSON text: however big it is, the host never parses it to answer.
 */

/** A session is running while a run of it is busy here or stored as running; interrupted when its latest run was. */
export type SessionStatus = "idle" | "running" | "interrupted";

export function sessionStatus(options: { busy: boolean; latestRun: RunRecord["status"] | undefined }): SessionStatus {
  // Busy here, or running in another process (a cluster node, another `hookbox run` on the file).
  if (options.busy || options.latestRun === "running") return "running";
  return options.latestRun === "interrupted" ? "interrupted" : "idle";
}

/** A session of a list (GET /v1/sessions, SessionManager.list): its summary and its status. */
export interface SessionListing extends SessionSummary {
  status: SessionStatus;
}

export interface SessionView {
  sessionId: string;
  tenant: string;
  status: SessionStatus;
  createdMs: number;
  forkedFrom?: { sessionId: string; runId: string };
  /** Which runs `turns` holds: `limit` runs from `offset` (0 = the session's first run) of `total`. */
  runs: { total: number; offset: number; limit: number };
  turns: { runId: string; status: RunRecord["status"]; prompt: string; phase?: string; turn?: Turn }[];
}

/** Runs in a session view by default, and at most. */
export const DESCRIBE_PAGE_RUNS = 20;
export const DESCRIBE_MAX_RUNS = 200;

export interface DescribeOptions {
  store: Store;
  sessionId: string;
  /** A run of the session is executing in this process. */
  busy: boolean;
  page?: { offset?: number; limit?: number };
}

/** The view without its turn, and the latest turn as JSON text (set on the entry of the run it belongs to). */
export async function describeSession(options: DescribeOptions): Promise<{ view: SessionView; turnJson?: string } | undefined> {
  const { store, sessionId, page = {} } = options;
  const record = await store.getSession(sessionId);
  if (!record) return undefined;
  const total = await store.countRuns(sessionId);
  const limit = Math.max(1, Math.min(page.limit ?? DESCRIBE_PAGE_RUNS, DESCRIBE_MAX_RUNS));
  const offset = Math.max(0, Math.min(page.offset ?? total - limit, total));
  const runs = await store.listRuns(sessionId, { offset, limit });
  const latest = total > 0 ? (await store.listRuns(sessionId, { offset: total - 1, limit: 1 }))[0] : undefined;
  const snapshot = latest && (await onePerTick(() => store.latestSnapshotText(latest.id)));
  const turns: SessionView["turns"] = runs.map((run) => ({
    runId: run.id,
    status: run.status,
    prompt: run.prompt,
    ...(run.id === latest?.id && snapshot ? { phase: snapshot.phase } : {}),
  }));
  const status = sessionStatus({ busy: options.busy, latestRun: latest?.status });
  const view: SessionView = {
    sessionId,
    tenant: record.tenant,
    status,
    createdMs: record.createdMs,
    ...(record.forkedFrom ? { forkedFrom: record.forkedFrom } : {}),
    runs: { total, offset, limit },
    turns,
  };
  return { view, ...(snapshot && turns.at(-1)?.runId === latest?.id ? { turnJson: snapshot.turnJson } : {}) };
}

/** The view as JSON text with the turn text spliced into the latest run's entry (no parse, no re-serialization). */
export function sessionViewJson(view: SessionView, turnJson: string | undefined): string {
  if (turnJson === undefined) return JSON.stringify(view);
  // A fresh marker each time: no prompt can contain it.
  const marker = `\u0000${randomUUID()}\u0000`;
  const entries = view.turns.slice();
  entries[entries.length - 1] = { ...entries[entries.length - 1], turn: marker as unknown as Turn };
  const text = JSON.stringify({ ...view, turns: entries });
  const quoted = JSON.stringify(marker);
  const at = text.lastIndexOf(quoted);
  return text.slice(0, at) + turnJson + text.slice(at + quoted.length);
}
