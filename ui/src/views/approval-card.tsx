import { useState } from "preact/hooks";
import { api, ApiError, segment } from "../api.js";
import { pretty, time, untilDeadline } from "../format.js";
import type { Json, JsonObject } from "../types.js";
import { describe, Problem } from "./common.js";

export interface ApprovalView {
  runId: string;
  pauseId: string;
  callId: string;
  name: string;
  args: JsonObject;
  reason: string;
  script: string;
  deadlineMs: number;
}

/** The argument a refusal's JSON path names: `$.args.amount` and `$.args["a b"][0]` name `amount` and `a b`. */
export function fieldOfPath(path: string | undefined): string | undefined {
  const match = /^\$\.args(?:\.([A-Za-z_$][A-Za-z0-9_$]*)|\[("(?:[^"\\]|\\.)*")\])/.exec(path ?? "");
  if (!match) return undefined;
  return match[1] ?? (JSON.parse(match[2]) as string);
}

/**
 * One open approval: the tool, its arguments and the hook's reason, and the answers. "Edit arguments" opens
 * one field per argument (a string as it is, anything else as JSON); the server checks the edited arguments
 * against the tool's schema, and a refusal is shown next to the field it names.
 */
export function ApprovalCard({ approval, onAnswered }: { approval: ApprovalView; onAnswered?(): void }) {
  const [editing, setEditing] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [fieldProblems, setFieldProblems] = useState<Record<string, string>>({});
  const [reason, setReason] = useState("");
  const [problem, setProblem] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const names = Object.keys(approval.args);

  const answer = async (body: { decision: "approve" | "reject"; args?: JsonObject; reason?: string }) => {
    setBusy(true);
    setProblem(undefined);
    setFieldProblems({});
    try {
      await api("POST", `/v1/runs/${segment(approval.runId)}/approvals/${segment(approval.pauseId)}`, body);
      onAnswered?.();
    } catch (error) {
      const field = error instanceof ApiError ? fieldOfPath(error.path) : undefined;
      if (field !== undefined && editing) setFieldProblems({ [field]: (error as ApiError).message });
      else setProblem(describe(error));
    } finally {
      setBusy(false);
    }
  };

  const startEditing = () => {
    setFields(Object.fromEntries(names.map((name) => [name, fieldText(approval.args[name])])));
    setFieldProblems({});
    setEditing(true);
  };

  const approveEdited = (event: Event) => {
    event.preventDefault();
    const args: JsonObject = {};
    const problems: Record<string, string> = {};
    for (const name of names) {
      const parsed = fieldValue(approval.args[name], fields[name] ?? "");
      if ("problem" in parsed) problems[name] = parsed.problem;
      else args[name] = parsed.value;
    }
    if (Object.keys(problems).length) return setFieldProblems(problems);
    void answer({ decision: "approve", args, ...(reason.trim() ? { reason: reason.trim() } : {}) });
  };

  const reasonText = reason.trim() ? { reason: reason.trim() } : {};
  return (
    <article class="approval" aria-label={`Approval for ${approval.name}`} data-pause-id={approval.pauseId}>
      <h3>
        Approval: <span class="tool-name">{approval.name}</span>
      </h3>
      <dl>
        <dt>Reason</dt>
        <dd class="reason">{approval.reason}</dd>
        <dt>Asked by</dt>
        <dd>{approval.script}</dd>
        <dt>Deadline</dt>
        <dd>
          {time(approval.deadlineMs)} ({untilDeadline(approval.deadlineMs)})
        </dd>
      </dl>
      {!editing ? (
        <pre class="args" aria-label="Arguments">
          {pretty(approval.args)}
        </pre>
      ) : (
        <form class="edit-args" onSubmit={approveEdited} aria-label="Edited arguments">
          {names.map((name) => (
            <div class="field" key={name}>
              <label>
                {name}
                <input
                  value={fields[name] ?? ""}
                  aria-invalid={fieldProblems[name] ? "true" : undefined}
                  aria-describedby={fieldProblems[name] ? `problem-${approval.pauseId}-${name}` : undefined}
                  onInput={(e) => setFields({ ...fields, [name]: (e.target as HTMLInputElement).value })}
                />
              </label>
              {fieldProblems[name] && (
                <span class="problem" role="alert" id={`problem-${approval.pauseId}-${name}`}>
                  {fieldProblems[name]}
                </span>
              )}
            </div>
          ))}
          <button type="submit" disabled={busy}>
            Approve edited
          </button>{" "}
          <button type="button" class="quiet" onClick={() => setEditing(false)}>
            Discard edits
          </button>
        </form>
      )}
      <label class="reason-input">
        Note (optional)
        <input value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      </label>
      <div class="actions">
        <button type="button" disabled={busy} onClick={() => answer({ decision: "approve", ...reasonText })}>
          Approve
        </button>
        <button type="button" disabled={busy} class="danger" onClick={() => answer({ decision: "reject", ...reasonText })}>
          Reject
        </button>
        {!editing && (
          <button type="button" disabled={busy || names.length === 0} onClick={startEditing}>
            Edit arguments
          </button>
        )}
      </div>
      <Problem text={problem} />
    </article>
  );
}

const fieldText = (value: Json | undefined): string => (typeof value === "string" ? value : JSON.stringify(value ?? null));

function fieldValue(original: Json | undefined, text: string): { value: Json } | { problem: string } {
  if (typeof original === "string") return { value: text };
  try {
    return { value: JSON.parse(text) as Json };
  } catch {
    return { problem: "not JSON: write a number, true/false, null, a quoted string, [..] or {..}" };
  }
}
