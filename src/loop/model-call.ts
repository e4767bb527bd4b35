import { APICallError, type LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import { sleep } from "./abortable.js";
import { ModelStreamError } from "../engine/stream-error.js";

/** A provider failure, as far as retrying it goes. */
export interface ModelFailure {
  /** HTTP status; absent for network errors. */
  status?: number;
  message: string;
  retryable: boolean;
  /** From `Retry-After` / `retry-after-ms`, when the provider sent one. */
  retryAfterMs?: number;
  /** The failure came inside a streamed answer (after the HTTP 200). */
  midStream?: boolean;
  /** The URL the request went to, without credentials or query (errors name it). */
  url?: string;
}

export interface ModelRetry {
  /** The attempt about to be made (2 for the first retry), counted across the primary and the fallback. */
  attempt: number;
  delayMs: number;
  status?: number;
  /** The model the next attempt goes to (`provider:modelId`). */
  model: string;
  message: string;
  /** True on the switch to the fallback model. */
  fallback?: boolean;
}

export interface ModelCallOptions<T> {
  /** The primary model, then the fallback (if any). */
  models: LanguageModelV4[];
  /** Retries per model after its first attempt. */
  retries: number;
  signal: AbortSignal;
  deadlineMs?: number;
  /** First backoff; it doubles with each retry (default 500 ms). */
  baseDelayMs?: number;
  onRetry(retry: ModelRetry): void;
  call(model: LanguageModelV4): Promise<T>;
}

/** A wait longer than this (a provider asking for minutes) is not worth holding the run: go to the fallback. */
const MAX_DELAY_MS = 60_000;

export const modelName = (model: LanguageModelV4): string => `${model.provider}:${model.modelId}`;

/**
 * One model call made resilient: a 429, a 5xx or a network error is retried with exponential backoff (the
 * provider's Retry-After wins when given), never past the run's deadline, and cancellation interrupts the
 * wait. When the primary's retries are spent the fallback gets the same treatment. Other failures (a 400,
 * a 401, a bug of ours) are not retried. When nothing answers, the error is `MODEL` with the last status.
 * The AI SDK's own retries live in generateText/streamText, which hookbox does not use: this is the only layer.
 */
export async function callModel<T>(options: ModelCallOptions<T>): Promise<{ value: T; model: LanguageModelV4 }> {
  const base = options.baseDelayMs ?? 500;
  let attempt = 0;
  let last: { failure: ModelFailure; model: LanguageModelV4 } | undefined;
  for (const [index, model] of options.models.entries()) {
    if (index > 0 && last) {
      options.onRetry({
        attempt: attempt + 1,
        delayMs: 0,
        ...(last.failure.status !== undefined ? { status: last.failure.status } : {}),
        model: modelName(model),
        message: last.failure.message,
        fallback: true,
      });
    }
    for (let retry = 0; ; retry++) {
      attempt += 1;
      try {
        return { value: await options.call(model), model };
      } catch (error) {
        if (options.signal.aborted) throw options.signal.reason;
        const failure = classifyModelError(error);
        if (!failure) throw error;
        last = { failure, model };
        if (!failure.retryable) throw modelError(last);
        if (retry >= options.retries) break;
        const delayMs = failure.retryAfterMs ?? base * 2 ** retry;
        const pastDeadline = options.deadlineMs !== undefined && Date.now() + delayMs >= options.deadlineMs;
        if (delayMs > MAX_DELAY_MS || pastDeadline) break;
        options.onRetry({
          attempt: attempt + 1,
          delayMs,
          ...(failure.status !== undefined ? { status: failure.status } : {}),
          model: modelName(model),
          message: failure.message,
        });
        await sleep(delayMs, options.signal);
      }
    }
  }
  throw modelError(last!);
}

/** undefined when the error is not the provider's (a scripted model running out, a bug): those are not retried. */
export function classifyModelError(error: unknown): ModelFailure | undefined {
  // Inside a stream the provider's own retryable flag decides (Anthropic marks overloaded_error retryable).
  if (error instanceof ModelStreamError) {
    return {
      ...(error.status !== undefined ? { status: error.status } : {}),
      message: error.message,
      retryable: error.retryable,
      midStream: true,
    };
  }
  if (!APICallError.isInstance(error)) return undefined;
  const status = error.statusCode;
  if (status !== undefined && status >= 200 && status < 300) {
    // The provider answered, then the body broke off (a cut connection is a fetch TypeError): retried like a
    // network error. A body that arrived whole but could not be read is the provider's fault, not retried.
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return { message: `${error.message}${cause}`, retryable: error.cause instanceof TypeError, midStream: true };
  }
  // Without a status the request never got an answer (connection refused, reset, DNS): the SDK marks those retryable.
  const retryable = status === undefined ? error.isRetryable : status === 408 || status === 409 || status === 429 || status >= 500;
  const retryAfterMs = parseRetryAfter(error.responseHeaders);
  const url = shownUrl(error.url);
  return {
    ...(status !== undefined ? { status } : {}),
    message: error.message,
    retryable,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...(url ? { url } : {}),
  };
}

/** A request URL as errors may show it: no user, password, query or fragment (they can carry keys). */
function shownUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  try {
    const url = new URL(raw);
    return `${url.origin}${url.pathname}`;
  } catch {
    return undefined;
  }
}

/** `retry-after-ms` (OpenAI), else `Retry-After` as seconds or an HTTP date. */
export function parseRetryAfter(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) =>
    Object.entries(headers)
      .find(([key]) => key.toLowerCase() === name)?.[1]
      ?.trim();
  const ms = Number(get("retry-after-ms"));
  if (get("retry-after-ms") && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const value = get("retry-after");
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function modelError({ failure, model }: { failure: ModelFailure; model: LanguageModelV4 }): HookboxError {
  const status = failure.status !== undefined ? `answered ${failure.status}` : undefined;
  const what = failure.midStream ? (status ? `${status} in its stream` : "broke off its answer") : (status ?? "was unreachable");
  // A model that never answered is named with where it was asked (a wrong --base-url is the usual cause).
  const at = failure.url && !status && !failure.midStream ? ` at ${failure.url}` : "";
  return new HookboxError("MODEL", `model ${modelName(model)}${at} ${what}: ${failure.message}`, {
    model: modelName(model),
    ...(failure.url ? { url: failure.url } : {}),
    ...(failure.status !== undefined ? { status: failure.status } : {}),
    ...(failure.midStream ? { midStream: true } : {}),
  });
}
