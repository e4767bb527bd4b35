import { useState } from "preact/hooks";
import { api, apiKey, ApiError } from "../api.js";

/** The key is checked with one request before it is kept (in this tab's sessionStorage only). */
export function SignIn({ notice, onSignedIn }: { notice: string | undefined; onSignedIn(): void }) {
  const [key, setKey] = useState("");
  const [problem, setProblem] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const given = key.trim();
    if (!given) return setProblem("Enter an API key.");
    setBusy(true);
    try {
      await api("GET", "/v1/sessions", undefined, given);
      apiKey.set(given);
      onSignedIn();
    } catch (error) {
      setProblem(
        error instanceof ApiError && error.status === 401
          ? "The server refused this API key: it is not a key of any tenant here."
          : `Could not sign in: ${(error as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>hookbox inspector</h1>
      <form onSubmit={submit}>
        <label>
          API key
          <input type="password" autocomplete="off" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {problem && (
          <p class="problem" role="alert">
            {problem}
          </p>
        )}
      </form>
      <p class="hint">The key stays in this tab (sessionStorage) and is sent only in the Authorization header.</p>
    </main>
  );
}
