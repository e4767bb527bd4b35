import { z } from "zod";
import type { WorkerMessage } from "./wire/protocol.js";
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

/** The message, or what is wrong with it (the first problem, with its path). */
export function checkWorkerMessage(message: unknown): { ok: true; message: WorkerMessage } | { ok: false; problem: string } {
  const parsed = WorkerMessageSchema.safeParse(message);
  if (parsed.success) return { ok: true, message: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { ok: false, problem: `${issue.path.length ? issue.path.join(".") : "message"}: ${issue.message}` };
}
