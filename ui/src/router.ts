import { useEffect, useState } from "preact/hooks";

/** The page's address after `#`: `/runs/run_x?call=c1` becomes {parts: ["runs", "run_x"], query: {call: "c1"}}. */
export interface Route {
  parts: string[];
  query: URLSearchParams;
}

function current(): Route {
  const hash = location.hash.replace(/^#/, "") || "/sessions";
  const [path, query = ""] = hash.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const changed = () => setRoute(current());
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}

export const href = {
  sessions: () => "#/sessions",
  session: (id: string) => `#/sessions/${encodeURIComponent(id)}`,
  runs: () => "#/runs",
  run: (id: string, callId?: string) => `#/runs/${encodeURIComponent(id)}${callId ? `?call=${encodeURIComponent(callId)}` : ""}`,
  approvals: () => "#/approvals",
  policies: () => "#/policies",
};

export function go(to: string): void {
  location.hash = to;
}
