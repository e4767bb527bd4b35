import { useState } from "preact/hooks";
import { api, segment } from "../api.js";
import { href } from "../router.js";
import { pretty, shortId, time } from "../format.js";
import { describe, Problem, useLoad } from "./common.js";

interface ScriptRef {
  name: string;
  version: number;
}
interface Deployment {
  deploymentId: string;
  number: number;
  scripts: ScriptRef[];
  shadow: ScriptRef[];
  fromConfig: boolean;
  rollbackOf?: string;
  createdMs: number;
}
interface VersionSummary {
  version: number;
  entry: string;
  files: string[];
  bundleHash: string;
  warnings: string[];
  createdMs: number;
}
interface ShadowReport {
  runs: number;
  calls: number;
  agreed: number;
  disagreed: Record<string, number>;
  samples: { runId: string; callId: string; hook: string; attempt: number; active: string; shadow: string; shadowDecision: unknown }[];
}
interface ReplayResult {
  changes: {
    sessionId: string;
    runId: string;
    callId: string;
    hook: string;
    attempt: number;
    recorded: string;
    replayed: string;
    decision: unknown;
  }[];
  summary: {
    runs: number;
    calls: number;
    same: number;
    changed: Record<string, number>;
    errors: number;
    stopped?: { code: string; message: string };
  };
}

const refs = (list: ScriptRef[]) => (list.length ? list.map((ref) => `${ref.name} v${ref.version}`).join(", ") : "none");

/** Script versions with their source, the deployment history, shadow reports and a replay form (docs/policy-lifecycle.md). */
export function PoliciesPage() {
  const scripts = useLoad(() => api<{ scripts: { name: string; latestVersion: number }[] }>("GET", "/v1/scripts"), []);
  const deployments = useLoad(() => api<{ deployments: Deployment[] }>("GET", "/v1/deployments"), []);
  const history = deployments.value?.deployments ?? [];
  const current = history.at(-1);
  return (
    <section class="policies">
      <h1>Policies</h1>
      <h2>Scripts</h2>
      <Problem text={scripts.error} />
      {(scripts.value?.scripts ?? []).length === 0 && !scripts.loading ? <p>No uploaded script yet (POST /v1/scripts).</p> : null}
      {(scripts.value?.scripts ?? []).map((script) => (
        <ScriptVersions key={script.name} name={script.name} />
      ))}
      <h2>Deployments</h2>
      <Problem text={deployments.error} />
      {current && (
        <p class="current-deployment">
          Current: deployment {current.number}, scripts {refs(current.scripts)}, shadow {refs(current.shadow)}
        </p>
      )}
      <table class="list" aria-label="Deployment history">
        <thead>
          <tr>
            <th>#</th>
            <th>Scripts</th>
            <th>Shadow</th>
            <th>Deployed</th>
            <th>Shadow report</th>
          </tr>
        </thead>
        <tbody>
          {[...history].reverse().map((deployment) => (
            <tr key={deployment.deploymentId} aria-current={deployment === current ? "true" : undefined}>
              <td>
                {deployment.number}
                {deployment === current ? " (current)" : ""}
                {deployment.rollbackOf ? " (rollback)" : ""}
              </td>
              <td>{deployment.fromConfig ? "the config's scripts" : refs(deployment.scripts)}</td>
              <td>{refs(deployment.shadow)}</td>
              <td>{time(deployment.createdMs)}</td>
              <td>{deployment.shadow.length > 0 && <ShadowReportView deployment={deployment} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Replay</h2>
      <ReplayForm scripts={scripts.value?.scripts ?? []} />
    </section>
  );
}

function ScriptVersions({ name }: { name: string }) {
  const versions = useLoad(() => api<{ versions: VersionSummary[] }>("GET", `/v1/scripts/${segment(name)}`), [name]);
  return (
    <article class="script" aria-label={`Script ${name}`}>
      <h3>{name}</h3>
      <Problem text={versions.error} />
      {[...(versions.value?.versions ?? [])].reverse().map((version) => (
        <VersionSource key={version.version} name={name} version={version} />
      ))}
    </article>
  );
}

function VersionSource({ name, version }: { name: string; version: VersionSummary }) {
  const [files, setFiles] = useState<Record<string, string> | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const open = async (event: Event) => {
    if (!(event.currentTarget as HTMLDetailsElement).open || files) return;
    try {
      const found = await api<{ files: Record<string, string> }>("GET", `/v1/scripts/${segment(name)}/versions/${version.version}`);
      setFiles(found.files);
    } catch (error) {
      setProblem(describe(error));
    }
  };
  return (
    <details class="version" onToggle={open}>
      <summary>
        v{version.version} · {version.entry} · {time(version.createdMs)} · {shortId(version.bundleHash)}
      </summary>
      <Problem text={problem} />
      {files &&
        Object.entries(files).map(([file, source]) => (
          <figure key={file}>
            <figcaption>{file}</figcaption>
            <pre class="source" aria-label={`${name} v${version.version} ${file}`}>
              {source}
            </pre>
          </figure>
        ))}
    </details>
  );
}

function ShadowReportView({ deployment }: { deployment: Deployment }) {
  const [report, setReport] = useState<ShadowReport | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const load = async () => {
    try {
      setReport(await api<ShadowReport>("GET", `/v1/deployments/${segment(deployment.deploymentId)}/shadow-report`));
    } catch (error) {
      setProblem(describe(error));
    }
  };
  return (
    <div class="shadow-report">
      <button type="button" onClick={load}>
        Shadow report {deployment.number}
      </button>
      <Problem text={problem} />
      {report && (
        <div aria-label={`Shadow report of deployment ${deployment.number}`} role="region">
          <p>
            {report.runs} runs, {report.calls} calls: {report.agreed} agreed
            {Object.entries(report.disagreed).map(([pair, count]) => `, ${count} ${pair}`)}
          </p>
          <table class="list">
            <thead>
              <tr>
                <th>Call</th>
                <th>Hook</th>
                <th>Active</th>
                <th>Shadow</th>
              </tr>
            </thead>
            <tbody>
              {report.samples.map((sample) => (
                <tr key={`${sample.runId} ${sample.callId} ${sample.hook} ${sample.attempt}`}>
                  <td>
                    <a href={href.run(sample.runId, sample.callId)}>{sample.callId}</a>
                  </td>
                  <td>{sample.hook}</td>
                  <td>{sample.active}</td>
                  <td>{sample.shadow}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function ReplayForm({ scripts }: { scripts: { name: string; latestVersion: number }[] }) {
  const [chosen, setChosen] = useState<Record<string, string>>({});
  const [since, setSince] = useState("");
  const [sessions, setSessions] = useState("");
  const [result, setResult] = useState<ReplayResult | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const candidates = Object.entries(chosen)
      .filter(([, version]) => version)
      .map(([name, version]) => ({ name, version: Number(version) }));
    if (!candidates.length) return setProblem("Choose at least one script version to replay.");
    const sessionIds = sessions
      .split(/[\s,]+/)
      .map((id) => id.trim())
      .filter(Boolean);
    setBusy(true);
    setProblem(undefined);
    try {
      setResult(
        await api<ReplayResult>("POST", "/v1/replays", {
          scripts: candidates,
          ...(since.trim() ? { since: since.trim() } : {}),
          ...(sessionIds.length ? { sessionIds } : {}),
        }),
      );
    } catch (error) {
      setProblem(describe(error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="replay" onSubmit={submit}>
      {scripts.map((script) => (
        <label key={script.name}>
          {script.name} version{" "}
          <select
            value={chosen[script.name] ?? ""}
            onChange={(e) => setChosen({ ...chosen, [script.name]: (e.target as HTMLSelectElement).value })}
          >
            <option value="">not replayed</option>
            {Array.from({ length: script.latestVersion }, (_, i) => script.latestVersion - i).map((version) => (
              <option key={version} value={String(version)}>
                v{version}
              </option>
            ))}
          </select>
        </label>
      ))}
      <label>
        Since (ISO date or time)
        <input value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} placeholder="2026-11-01" />
      </label>
      <label>
        Sessions (ids, comma separated)
        <input value={sessions} onInput={(e) => setSessions((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit" disabled={busy}>
        Replay
      </button>
      <Problem text={problem} />
      {result && (
        <div role="region" aria-label="Replay result">
          <p>
            {result.summary.runs} runs, {result.summary.calls} calls: {result.summary.same} the same, {result.changes.length} changed,{" "}
            {result.summary.errors} hook failures
            {result.summary.stopped ? `; stopped early: ${result.summary.stopped.message}` : ""}
          </p>
          <table class="list" aria-label="Changed decisions">
            <thead>
              <tr>
                <th>Call</th>
                <th>Hook</th>
                <th>Recorded</th>
                <th>Replayed</th>
                <th>Decision</th>
              </tr>
            </thead>
            <tbody>
              {result.changes.map((change) => (
                <tr key={`${change.runId} ${change.callId} ${change.hook} ${change.attempt}`}>
                  <td>
                    <a href={href.run(change.runId, change.callId)}>
                      {change.callId} in {shortId(change.runId)}
                    </a>
                  </td>
                  <td>{change.hook}</td>
                  <td>{change.recorded}</td>
                  <td>{change.replayed}</td>
                  <td>
                    <code>{pretty(change.decision)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </form>
  );
}
