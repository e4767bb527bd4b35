import { APICallError } from "@ai-sdk/provider";

/*
 * A failure inside a streamed answer: an `error` part the provider sent after the HTTP 200 (Anthropic's
 * overloaded_error, OpenAI's response.failed), or a stream that broke or ended without its finish. It is a
 * model failure like an HTTP error, so model-call.ts retries it (when the provider says it may be) and reports
 * it as MODEL; the status and retryable flag are the provider's, or inferred from its error type.
 */
export class ModelStreamError extends Error {
  constructor(
    message: string,
    /** The HTTP status the provider gives the error (or its documented equivalent); absent for a broken stream. */
    readonly status: number | undefined,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "ModelStreamError";
  }
}

/** The AI SDK marks provider stream errors with this symbol (createProviderStreamError in provider-utils). */
const PROVIDER_STREAM_ERROR = Symbol.for("vercel.ai.providerStreamError");

const retryableStatus = (status: number | undefined) =>
  status !== undefined && (status === 408 || status === 409 || status === 429 || status >= 500);

/** Error types providers send in a stream that have no status of their own (Anthropic's, OpenAI's). */
const STATUS_OF_TYPE: Record<string, number> = {
  overloaded_error: 529,
  api_error: 500,
  server_error: 500,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
};

const record = (value: unknown): Record<PropertyKey, unknown> | undefined =>
  typeof value === "object" && value !== null ? (value as Record<PropertyKey, unknown>) : undefined;

const httpStatus = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= 100 && value <= 599
    ? value
    : typeof value === "string" && /^\d{3}$/.test(value)
      ? Number(value)
      : undefined;

/** The `error` value of a stream's error part, as a ModelStreamError with the provider's status and retryability. */
export function streamPartError(error: unknown): ModelStreamError {
  if (error instanceof ModelStreamError) return error;
  if (APICallError.isInstance(error)) {
    return new ModelStreamError(error.message, error.statusCode, error.isRetryable || retryableStatus(error.statusCode));
  }
  const outer = record(error);
  if (outer && outer[PROVIDER_STREAM_ERROR] === true) {
    const status = httpStatus(outer.statusCode);
    const type = typeof outer.type === "string" ? outer.type : undefined;
    const inferred = status ?? (type ? STATUS_OF_TYPE[type] : undefined);
    const retryable = typeof outer.isRetryable === "boolean" ? outer.isRetryable : retryableStatus(inferred);
    return new ModelStreamError(described(String(outer.message), type), inferred, retryable);
  }
  if (error instanceof Error) return new ModelStreamError(error.message, undefined, false);
  const details = record(outer?.error) ?? outer;
  if (details && typeof details.message === "string") {
    const type = typeof details.type === "string" ? details.type : undefined;
    const status =
      httpStatus(details.statusCode) ?? httpStatus(details.status) ?? httpStatus(details.code) ?? (type ? STATUS_OF_TYPE[type] : undefined);
    const flag = details.isRetryable ?? details.is_retryable;
    return new ModelStreamError(described(details.message, type), status, typeof flag === "boolean" ? flag : retryableStatus(status));
  }
  return new ModelStreamError(typeof error === "string" ? error : (JSON.stringify(error) ?? String(error)), undefined, false);
}

/** A stream that broke while it was read (the connection cut): no answer came, so it is retried like a network error. */
export function brokenStreamError(error: unknown): ModelStreamError {
  const cause = record(error)?.cause;
  const why = [error instanceof Error ? error.message : String(error), cause instanceof Error ? cause.message : undefined]
    .filter(Boolean)
    .join(": ");
  return new ModelStreamError(`the stream broke: ${why}`, undefined, true);
}

function described(message: string, type: string | undefined): string {
  return type && !message.includes(type) ? `${type}: ${message}` : message;
}
