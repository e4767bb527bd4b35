import { Component } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, segment } from "../api.js";
import { followRun } from "../event-stream.js";
import { href } from "../router.js";
import { pretty, shortId, time } from "../format.js";
import { addEvents, emptyTimeline, EVENT_KINDS, summary, usageText, type Timeline } from "../timeline.js";
import type { RunEvent, RunRecord } from "../types.js";
import { ApprovalCard } from "./approval-card.js";
import { describe, Problem, StatusBadge, useLoad } from "./common.js";

/**
 * A run: its live timeline over SSE, what it waits for (a step pause, approvals) and the controls. Batches of
 * events are applied once per animation frame, so a long run read at once renders once or twice, not once
 * per event.
 */
export function RunPage({ runId, callId }: { runId: string; callId: string | undefined }) {
  const record = useLoad(() => api<RunRecord>("GET", `/v1/runs/${segment(runId)}`), [runId]);
  const [timeline, setTimeline] = useState<Timeline>(emptyTimeline);
  const [connection, setConnection] = useState("connecting");
  const [failure, setFailure] = useState<string | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [expanded, setExpanded] = useState<Set<number>>(new Set());

  useEffect(() => {
    const controller = new AbortController();
    let pending: RunEvent[] = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      const batch = pending;
      pending = [];
      setTimeline((current) => addEvents(current, batch));
    };
    void followRun(
      runId,
      {
        onEvents: (events) => {
          pending.push(...events);
          frame ||= requestAnimationFrame(flush);
        },
        onState: (state) => setConnection(state),
        onFailure: (status, message) => setFailure(status === 404 ? `No run ${runId} for this key.` : message),
      },
      controller.signal,
    );
    return () => {
      controller.abort();
      cancelAnimationFrame(frame);
    };
  }, [runId]);

  // The call a link points at (a replay's changed decision): scrolled to and marked once it is on the page.
  const marked = useRef(false);
  useEffect(() => {
    if (!callId || marked.current) return;
    const target = document.querySelector(`[data-call-id="${CSS.escape(callId)}"]`);
    if (!target) return;
    marked.current = true;
    target.scrollIntoView({ block: "center" });
  }, [timeline, callId]);

  const control = async (path: string, body?: unknown) => {
    setProblem(undefined);
    try {
      await api("POST", `/v1/runs/${segment(runId)}/${path}`, body);
    } catch (error) {
      setProblem(describe(error));
    }
  };

  const kinds = useMemo(() => [...new Set([...EVENT_KINDS, ...timeline.events.map((event) => event.type)])], [timeline.events]);
  const shown = useMemo(() => timeline.events.filter((event) => !hidden.has(event.type)), [timeline.events, hidden]);
  const finished = timeline.finished;
  const status = finished ? String(finished.status) : (record.value?.status ?? "running");
  const start = timeline.events[0]?.timestampMs;
  const toggle = (seq: number) =>
    setExpanded((current) => {
      const next = new Set(current);
      if (!next.delete(seq)) next.add(seq);
      return next;
    });

  return (
    <section class="run">
      <p class="crumbs">
        <a href={href.sessions()}>Sessions</a>
        {record.value && (
          <>
            {" / "}
            <a href={href.session(record.value.sessionId)} title={record.value.sessionId}>
              {shortId(record.value.sessionId)}
            </a>
          </>
        )}
        {" / "}
        <span title={runId}>{shortId(runId)}</span>
      </p>
      <h1>
        Run <StatusBadge status={status} /> <span class="connection">{connection}</span>
      </h1>
      {record.value && <p class="prompt-line">{record.value.prompt}</p>}
      <Problem text={failure ?? record.error} />
      {finished && (
        <p class={`final final-${String(finished.status)}`} role="status">
          Run {String(finished.status)}
          {finished.errorCode ? ` (${String(finished.errorCode)})` : ""}
          {finished.reason ? `: ${String(finished.reason)}` : ""}
          {finished.usage ? <span class="usage"> · spent {usageText(finished.usage)}</span> : null}
        </p>
      )}
      <div class="controls">
        {timeline.pause && !finished && (
          <div class="pause" role="group" aria-label="Step pause">
            <span>Paused {timeline.pause.phase.replace("_", " ")}</span>{" "}
            <button type="button" onClick={() => control("continue", { pauseId: timeline.pause!.pauseId })}>
              Continue
            </button>
          </div>
        )}
        {!finished && status === "running" && (
          <button type="button" class="danger" onClick={() => control("cancel")}>
            Cancel run
          </button>
        )}
        <Problem text={problem} />
      </div>
      {timeline.approvals.map((approval) => (
        <ApprovalCard key={approval.pauseId} approval={{ ...approval, runId }} />
      ))}
      <details class="filter">
        <summary>
          Filter by kind ({shown.length} of {timeline.events.length} shown)
        </summary>
        <fieldset>
          <legend>Show</legend>
          {kinds.map((kind) => (
            <label class="inline" key={kind}>
              <input
                type="checkbox"
                checked={!hidden.has(kind)}
                onChange={() =>
                  setHidden((current) => {
                    const next = new Set(current);
                    if (!next.delete(kind)) next.add(kind);
                    return next;
                  })
                }
              />{" "}
              {kind}
            </label>
          ))}
        </fieldset>
      </details>
      <ol class="timeline" aria-label="Timeline">
        {shown.map((event) => (
          <Entry
            key={event.seq}
            event={event}
            start={start}
            expanded={expanded.has(event.seq!)}
            marked={callId !== undefined && event.callId === callId}
            onToggle={toggle}
          />
        ))}
        {timeline.writing && (
          <li class="entry writing" aria-label="Model writing">
            <span class="kind">writing</span>
            <span class="text" aria-live="polite">
              {timeline.writing.text}
            </span>
          </li>
        )}
      </ol>
    </section>
  );
}

interface EntryProps {
  event: RunEvent;
  start: number | undefined;
  expanded: boolean;
  marked: boolean;
  onToggle(seq: number): void;
}

/** One event; re-rendered only when it is expanded, collapsed or marked (a long timeline stays cheap to update). */
class Entry extends Component<EntryProps> {
  shouldComponentUpdate(next: EntryProps) {
    return next.event !== this.props.event || next.expanded !== this.props.expanded || next.marked !== this.props.marked;
  }
  render({ event, start, expanded, marked, onToggle }: EntryProps) {
    const seq = event.seq!;
    const callId = typeof event.callId === "string" ? event.callId : undefined;
    return (
      <li
        class={`entry kind-${event.type.replace(/[^a-z-]/g, "-")}${marked ? " marked" : ""}`}
        data-seq={seq}
        data-type={event.type}
        data-call-id={callId}
        aria-current={marked ? "true" : undefined}
      >
        <span class="seq">{seq}</span>
        <span class="at" title={time(event.timestampMs)}>
          +{start === undefined ? 0 : event.timestampMs - start} ms
        </span>
        <span class="kind">{event.type}</span>
        <span class="text">{summary(event)}</span>
        <button type="button" class="quiet json-toggle" aria-expanded={expanded} onClick={() => onToggle(seq)}>
          JSON
        </button>
        {expanded && <pre class="json">{pretty(event)}</pre>}
      </li>
    );
  }
}
