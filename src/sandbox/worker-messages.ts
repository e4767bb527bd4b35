import { z } from "zod";
import type { DoneMessage, WorkerMessage } from "./wire/protocol.js";
import { MAX_ERROR_CODE_CHARS, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_STACK_CHARS } from "./wire/error-limits.js";

/*
 * What the host accepts from a sandbox worker. The worker runs guest code: after a V8 escape its messages
 * are the attacker's, so every frame is checked against the protocol before the host acts on it, and one
 * that breaks it costs the worker (worker-process.ts kills it and its calls fail closed). Text fields are
 * only checked to be strings here: what a callback returned is guest data, parsed and validated as such
 * (validate.ts); the frame size bounds them all (framing.ts).
 */

const callId = z.number().int().nonnegative();

/** A text field kept, cut to `max` characters (a worker's error text ends in events, spans and prompts). */
const clipped = (max: number) =>
  z.string().transform((text) => (text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`));

/**
 * An error a worker reports: only the codes a worker's failures have (a taken-over worker must not report
 * CANCELLED or a host error), the message clipped, and only the details the host reads, each bounded.
 */
const SerializedErrorSchema = z.object({
  code: z.enum([
    "SCRIPT_ERROR",
    "SCRIPT_LOAD",
    "HOOK_CONTRACT",
    "PAYLOAD_TOO_LARGE",
    "SANDBOX_TIMEOUT",
    "SANDBOX_MEMORY",
    "SANDBOX_CRASHED",
  ]),
  message: clipped(MAX_ERROR_MESSAGE_CHARS),
  details: z
    .object({
      script: clipped(1024),
      kind: clipped(64),
      target: clipped(1024),
      stack: clipped(MAX_ERROR_STACK_CHARS),
      path: clipped(MAX_ERROR_MESSAGE_CHARS),
      errorCode: z
        .string()
        .max(MAX_ERROR_CODE_CHARS)
        .regex(/^[A-Z][A-Z0-9_]*$/),
      thrownMessage: clipped(MAX_ERROR_MESSAGE_CHARS),
      limit: z.enum(["cpu", "wall"]),
      limitMs: z.number(),
      limitMb: z.number(),
    })
    .partial()
    .optional(),
});

const CallbackOutcomeSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("settled"), callId, value: z.string(), lazyKey: z.string().optional() }),
  z.object({ type: z.literal("failed"), callId, error: SerializedErrorSchema }),
  z.object({
    type: z.literal("request"),
    callId,
    requestId: z.number().int().nonnegative(),
    op: z.enum(["next", "capability"]),
    value: z.string(),
  }),
]);

const LogRecordSchema = z.object({
  tenant: z.string(),
  runId: z.string(),
  script: z.string(),
  level: z.enum(["debug", "info", "warn", "error"]),
  message: z.string(),
});

const count = z.number().nonnegative();

const DoneMessageSchema = z.object({
  type: z.literal("done"),
  seq: z.number().int().nonnegative(),
  outcomes: z.array(CallbackOutcomeSchema),
  logs: z.array(LogRecordSchema),
  load: z
    .discriminatedUnion("ok", [
      z.object({ ok: z.literal(true), manifest: z.string() }),
      z.object({ ok: z.literal(false), error: SerializedErrorSchema }),
    ])
    .optional(),
  coverage: z.array(z.object({ script: z.string(), text: z.string() })).optional(),
  refused: z.literal(true).optional(),
  breach: z.enum(["SANDBOX_TIMEOUT", "SANDBOX_MEMORY"]).optional(),
  cpuMs: count.optional(),
  isolates: count.optional(),
  workerMs: count.optional(),
});

const ReadyMessageSchema = z.object({ type: z.literal("ready") });

/** tsc checks that the schema and protocol.ts describe the same messages. */
export const WorkerMessageSchema: z.ZodType<WorkerMessage> = z.discriminatedUnion("type", [DoneMessageSchema, ReadyMessageSchema]);

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
const isOptionalAmount = (value: unknown): boolean =>
  value === undefined || (typeof value === "number" && Number.isFinite(value) && value >= 0);
const COMMON_REPLY_KEYS = new Set(["type", "seq", "outcomes", "logs", "breach", "refused", "cpuMs", "isolates", "workerMs"]);
const SETTLED_KEYS = new Set(["type", "callId", "value", "lazyKey"]);
const REQUEST_KEYS = new Set(["type", "callId", "requestId", "op", "value"]);

function onlyKeys(record: object, allowed: Set<string>): boolean {
  for (const key in record) if (!allowed.has(key)) return false;
  return true;
}

function isCommonOutcome(outcome: unknown): boolean {
  if (typeof outcome !== "object" || outcome === null) return false;
  const fields = outcome as Record<string, unknown>;
  if (!isCount(fields.callId) || typeof fields.value !== "string") return false;
  if (fields.type === "settled")
    return onlyKeys(fields, SETTLED_KEYS) && (fields.lazyKey === undefined || typeof fields.lazyKey === "string");
  if (fields.type === "request")
    return onlyKeys(fields, REQUEST_KEYS) && isCount(fields.requestId) && (fields.op === "next" || fields.op === "capability");
  return false;
}

/**
 * The reply of nearly every message (settled or request outcomes, no logs, no load or coverage, no key the
 * schema does not name), checked by hand: it is on every hook's path, and the schema's parse costs more than
 * the rest of the check. It accepts only what the schema accepts unchanged, so its answer is the schema's;
 * anything else (undefined) goes to the schema (test/sandbox/worker-messages.property.test.ts).
 */
export function commonReply(message: unknown): DoneMessage | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const fields = message as Record<string, unknown>;
  if (fields.type !== "done" || !isCount(fields.seq) || !onlyKeys(fields, COMMON_REPLY_KEYS)) return undefined;
  if (!Array.isArray(fields.logs) || fields.logs.length !== 0 || !Array.isArray(fields.outcomes)) return undefined;
  for (const outcome of fields.outcomes) if (!isCommonOutcome(outcome)) return undefined;
  if (fields.breach !== undefined && fields.breach !== "SANDBOX_TIMEOUT" && fields.breach !== "SANDBOX_MEMORY") return undefined;
  if (fields.refused !== undefined && fields.refused !== true) return undefined;
  if (!isOptionalAmount(fields.cpuMs) || !isOptionalAmount(fields.isolates) || !isOptionalAmount(fields.workerMs)) return undefined;
  return fields as unknown as DoneMessage;
}

/** The message, or what is wrong with it (the first problem, with its path). */
export function checkWorkerMessage(message: unknown): { ok: true; message: WorkerMessage } | { ok: false; problem: string } {
  const common = commonReply(message);
  if (common !== undefined) return { ok: true, message: common };
  const parsed = WorkerMessageSchema.safeParse(message);
  if (parsed.success) return { ok: true, message: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { ok: false, problem: `${issue.path.length ? issue.path.join(".") : "message"}: ${issue.message}` };
}
