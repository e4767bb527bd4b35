/*
 * What the inspector reads from the API, as far as it shows it. The page is a client of the public HTTP API
 * (docs/http-api.md, docs/events.md), so these are written from the documents, not imported from the server.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A stored event (it has a seq) or a live text delta (it has none). */
export interface RunEvent {
  type: string;
  seq?: number;
  timestampMs: number;
  [field: string]: unknown;
}

export interface SessionSummary {
  id: string;
  /** idle, running (a run of it is in flight) or interrupted (its latest run was; it can be resumed). */
  status: string;
  createdMs: number;
  runs: number;
  lastRun?: { id: string; status: string; prompt: string; startedMs: number };
}

export interface SessionView {
  sessionId: string;
  status: string;
  createdMs: number;
  runs: { total: number; offset: number; limit: number };
  turns: { runId: string; status: string; prompt: string }[];
}

export interface RunRecord {
  id: string;
  sessionId: string;
  status: string;
  prompt: string;
  startedMs: number;
  finishedMs?: number;
  reason?: string;
  errorCode?: string;
}

export interface RunListItem {
  runId: string;
  sessionId: string;
  status: string;
  prompt: string;
  startedMs: number;
  finishedMs?: number;
  iterations: number;
  reason?: string;
  errorCode?: string;
}

export interface OpenApproval {
  pauseId: string;
  runId: string;
  callId: string;
  name: string;
  args: JsonObject;
  reason: string;
  script: string;
  deadlineMs: number;
}
