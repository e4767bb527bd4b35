import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { apiKey, whenUnauthorized } from "./api.js";
import { href, useRoute } from "./router.js";
import { SignIn } from "./views/sign-in.js";
import { Sessions } from "./views/sessions.js";
import { SessionPage } from "./views/session.js";
import { RunPage } from "./views/run.js";
import { RunsPage } from "./views/runs.js";
import { ApprovalsPage } from "./views/approvals.js";
import { PoliciesPage } from "./views/policies.js";
import "./styles.css";

function App() {
  const [signedIn, setSignedIn] = useState(apiKey.get() !== null);
  const [notice, setNotice] = useState<string | undefined>();
  const route = useRoute();
  useEffect(() => {
    whenUnauthorized((message) => {
      apiKey.clear();
      setNotice(`The server refused the API key (${message}). Sign in again.`);
      setSignedIn(false);
    });
  }, []);
  if (!signedIn) return <SignIn notice={notice} onSignedIn={() => (setNotice(undefined), setSignedIn(true))} />;
  const [page, id] = route.parts;
  const nav = (to: string, label: string, active: boolean) => (
    <a href={to} aria-current={active ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <header class="top">
        <strong class="brand">hookbox inspector</strong>
        <nav aria-label="Main">
          {nav(href.sessions(), "Sessions", page === "sessions")}
          {nav(href.runs(), "Runs", page === "runs")}
          {nav(href.approvals(), "Approvals", page === "approvals")}
          {nav(href.policies(), "Policies", page === "policies")}
        </nav>
        <button
          type="button"
          class="quiet"
          onClick={() => {
            apiKey.clear();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        {page === "sessions" && id ? (
          <SessionPage key={id} sessionId={id} />
        ) : page === "runs" && id ? (
          <RunPage key={id} runId={id} callId={route.query.get("call") ?? undefined} />
        ) : page === "runs" ? (
          <RunsPage />
        ) : page === "approvals" ? (
          <ApprovalsPage />
        ) : page === "policies" ? (
          <PoliciesPage />
        ) : (
          <Sessions />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
