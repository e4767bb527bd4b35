import { useState } from "preact/hooks";
import { api, segment } from "../api.js";
import { go, href } from "../router.js";
import { shortId } from "../format.js";
import type { SessionView } from "../types.js";
import { describe, Problem, StatusBadge, useLoad } from "./common.js";

export function SessionPage({ sessionId }: { sessionId: string }) {
  const session = useLoad(() => api<SessionView>("GET", `/v1/sessions/${segment(sessionId)}?limit=200`), [sessionId], 3000);
  const [prompt, setPrompt] = useState("");
  const [step, setStep] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  const start = async (event: Event) => {
    event.preventDefault();
    if (!prompt.trim()) return setProblem("Write a prompt first.");
    try {
      const { runId } = await api<{ runId: string }>("POST", `/v1/sessions/${segment(sessionId)}/runs`, { prompt, step });
      go(href.run(runId));
    } catch (error) {
      setProblem(describe(error));
    }
  };
  const view = session.value;
  return (
    <section>
      <p class="crumbs">
        <a href={href.sessions()}>Sessions</a> / <span title={sessionId}>{shortId(sessionId)}</span>
      </p>
      <h1>Session {view && <StatusBadge status={view.status} />}</h1>
      <Problem text={session.error} />
      <form class="prompt-box" onSubmit={start}>
        <label>
          Prompt
          <textarea rows={3} value={prompt} onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} />
        </label>
        <label class="inline">
          <input type="checkbox" checked={step} onChange={(e) => setStep((e.target as HTMLInputElement).checked)} /> Step
        </label>
        <button type="submit">Start run</button>
        <Problem text={problem} />
      </form>
      <h2>Runs</h2>
      <ol class="runs">
        {[...(view?.turns ?? [])].reverse().map((turn) => (
          <li key={turn.runId}>
            <StatusBadge status={turn.status} />{" "}
            <a href={href.run(turn.runId)} class="prompt">
              {turn.prompt}
            </a>
          </li>
        ))}
      </ol>
    </section>
  );
}
