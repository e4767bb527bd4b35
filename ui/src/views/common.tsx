import { useCallback, useEffect, useState } from "preact/hooks";
import { ApiError } from "../api.js";

/** Data loaded from the API, with its error, and a way to load it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], refreshMs?: number) {
  const [state, setState] = useState<{ value?: T; error?: string; loading: boolean }>({ loading: true });
  const reload = useCallback(() => {
    load().then(
      (value) => setState({ value, loading: false }),
      (error: unknown) => setState((previous) => ({ ...previous, error: describe(error), loading: false })),
    );
  }, deps);
  useEffect(() => {
    reload();
    if (!refreshMs) return;
    const timer = setInterval(reload, refreshMs);
    return () => clearInterval(timer);
  }, [reload]);
  return { ...state, reload };
}

export function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.message}${error.code && error.status ? ` (${error.code})` : ""}`;
  return (error as Error)?.message ?? String(error);
}

export function Problem({ text }: { text?: string | undefined }) {
  return text ? (
    <p class="problem" role="alert">
      {text}
    </p>
  ) : null;
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status.replace(/[^a-z]/g, "")}`}>{status}</span>;
}
