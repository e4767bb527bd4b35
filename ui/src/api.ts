/*
 * The inspector speaks only the public HTTP API (docs/http-api.md), with the tenant's key in the
 * Authorization header. The key lives in this tab's sessionStorage: never in a URL, a cookie or a log.
 */

const KEY = "hookbox.apiKey";

export const apiKey = {
  get(): string | null {
    return sessionStorage.getItem(KEY);
  },
  set(key: string): void {
    sessionStorage.setItem(KEY, key);
  },
  clear(): void {
    sessionStorage.removeItem(KEY);
  },
};

/** An answer other than 2xx, with the API's error code and the JSON path it names (if any). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

/** Called when the server refuses the key (401): the app signs out and says why. */
let onUnauthorized: (message: string) => void = () => undefined;
export function whenUnauthorized(handler: (message: string) => void): void {
  onUnauthorized = handler;
}

export function authHeaders(key = apiKey.get()): Record<string, string> {
  return key ? { authorization: `Bearer ${key}` } : {};
}

export async function api<T>(method: string, path: string, body?: unknown, key?: string): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      cache: "no-store",
      headers: { ...authHeaders(key), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError(0, "NETWORK", "the server could not be reached");
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string; path?: string } } | undefined)?.error;
    const failure = new ApiError(
      response.status,
      error?.code ?? `HTTP_${response.status}`,
      error?.message ?? `HTTP ${response.status}`,
      error?.path,
    );
    if (response.status === 401 && key === undefined) onUnauthorized(failure.message);
    throw failure;
  }
  return parsed as T;
}

/** Path segments come from the server or the page's address: always encoded. */
export const segment = (value: string): string => encodeURIComponent(value);
