import { z } from "zod";
import { JsonObjectSchema, JsonSchema } from "../turns/json.js";
import { FINISH_REASONS, RUN_STATUSES } from "../turns/keys.gen.js";
import type { HookboxEvent, TextDeltaEvent } from "./types.js";

/*
 * The events as JSON Schema (through zod), for the OpenAPI document: one schema per event type, and their union
 * with `type` as the discriminator. The assignments at the end fail to compile when these and the event types of
 * types.ts drift apart, in either direction.
 */

const base = {
  seq: z.number().int().meta({ description: "gap-free from 1 within a run; the SSE id" }),
  timestampMs: z.number(),
  sessionId: z.string(),
  inferenceId: z.string(),
};
const usage = z.object({ inputTokens: z.number(), outputTokens: z.number(), costUsd: z.number() });
const call = z.object({
  id: z.string(),
  name: z.string(),
  args: JsonObjectSchema,
  rawArgs: z.string().optional().meta({ description: "the model's argument text when it was not a JSON object (args is then {})" }),
  providerExecuted: z.literal(true).optional(),
});
const finishReason = z.enum(FINISH_REASONS);

/** Each event type's schema, by the name the document gives it. */
export const eventSchemas = {
  RunStartedEvent: z.object({ ...base, type: z.literal("run-started"), prompt: z.string(), runId: z.string() }),
  InferenceStartedEvent: z.object({ ...base, type: z.literal("inference-started"), iteration: z.number().int() }),
  InferenceFinishedEvent: z.object({
    ...base,
    type: z.literal("inference-finished"),
    iteration: z.number().int(),
    text: z.string().optional(),
    toolCalls: z.array(call),
    finishReason: finishReason.optional(),
    usage: usage.optional(),
  }),
  InferenceRetryEvent: z.object({
    ...base,
    type: z.literal("inference-retry"),
    iteration: z.number().int(),
    attempt: z.number().int(),
    delayMs: z.number(),
    status: z.number().int().optional(),
    model: z.string(),
    message: z.string(),
    fallback: z.boolean().optional(),
  }),
  HookDecisionEvent: z.object({
    ...base,
    type: z.literal("hook-decision"),
    hook: z.string(),
    script: z.string(),
    callId: z.string().optional(),
    decision: JsonObjectSchema,
    version: z.number().int().optional(),
    bundleHash: z.string().optional(),
    shadow: z.literal(true).optional(),
    recheck: z.literal(true).optional(),
  }),
  ToolStartedEvent: z.object({
    ...base,
    type: z.literal("tool-started"),
    callId: z.string(),
    name: z.string(),
    args: JsonObjectSchema,
    attempt: z.number().int(),
    origin: z.enum(["host", "script"]),
  }),
  ToolFinishedEvent: z.object({
    ...base,
    type: z.literal("tool-finished"),
    callId: z.string(),
    name: z.string(),
    attempt: z.number().int(),
    durationMs: z.number(),
    result: JsonSchema.optional(),
    error: z.object({ message: z.string(), code: z.string().optional() }).optional(),
    providerExecuted: z.literal(true).optional(),
  }),
  ToolRetryEvent: z.object({
    ...base,
    type: z.literal("tool-retry"),
    callId: z.string(),
    attempt: z.number().int(),
    backoffMs: z.number(),
  }),
  ContextRestartEvent: z.object({
    ...base,
    type: z.literal("context-restart"),
    callId: z.string(),
    restartType: z.string(),
    applied: z.boolean(),
  }),
  DebuggerPauseEvent: z.object({
    ...base,
    type: z.literal("debugger.pause"),
    pauseId: z.string(),
    phase: z.enum(["after_inference", "after_tools"]),
    deadlineMs: z.number(),
    pendingToolCalls: z.array(call),
  }),
  DebuggerContinueEvent: z.object({
    ...base,
    type: z.literal("debugger.continue"),
    pauseId: z.string(),
    reason: z.enum(["continued", "timeout", "cancelled", "disabled"]),
  }),
  ApprovalRequestedEvent: z.object({
    ...base,
    type: z.literal("approval.requested"),
    pauseId: z.string(),
    callId: z.string(),
    name: z.string(),
    args: JsonObjectSchema,
    reason: z.string(),
    script: z.string(),
    deadlineMs: z.number(),
  }),
  ApprovalResolvedEvent: z.object({
    ...base,
    type: z.literal("approval.resolved"),
    pauseId: z.string(),
    callId: z.string(),
    decision: z.enum(["approved", "rejected", "timeout", "cancelled"]),
    args: JsonObjectSchema.optional(),
    reason: z.string().optional(),
    approvedBy: z.string().optional(),
  }),
  LogEvent: z.object({
    ...base,
    type: z.literal("log"),
    script: z.string(),
    tenant: z.string().optional(),
    level: z.enum(["debug", "info", "warn", "error"]),
    message: z.string(),
  }),
  CapabilityEvent: z.object({
    ...base,
    type: z.literal("capability"),
    kind: z.enum(["fetch", "kv", "model"]),
    script: z.string(),
    ok: z.boolean(),
    durationMs: z.number(),
    errorCode: z.string().optional(),
    method: z.string().optional(),
    url: z.string().optional(),
    status: z.number().int().optional(),
    op: z.string().optional(),
    key: z.string().optional(),
    model: z.string().optional(),
    usage: usage.optional(),
    refusals: z.number().int().optional(),
  }),
  ContextTrimmedEvent: z
    .object({
      ...base,
      type: z.literal("context-trimmed"),
      iteration: z.number().int(),
      droppedMessages: z.number().int(),
      droppedBlocks: z.number().int(),
      droppedBytes: z.number().int(),
      droppedTokens: z.number().int(),
      totalDroppedMessages: z.number().int(),
      keptBytes: z.number().int(),
      budgetBytes: z.number().int(),
      summarized: z.boolean(),
      model: z.string().optional(),
      usage: usage.optional(),
      summaryError: z.string().optional(),
    })
    .meta({ description: "messages left out of the model's context to keep it within its budget (docs/loop.md)" }),
  RunInterruptedEvent: z
    .object({ ...base, type: z.literal("run-interrupted"), reason: z.string(), iterations: z.number().int() })
    .meta({ description: "cut off before its end, and resumable: run-resumed goes on after it" }),
  RunResumedEvent: z.object({ ...base, type: z.literal("run-resumed"), node: z.string().optional(), iterations: z.number().int() }),
  RunFinishedEvent: z.object({
    ...base,
    type: z.literal("run-finished"),
    status: z.enum(RUN_STATUSES),
    reason: z.string().optional(),
    errorCode: z.string().optional(),
    text: z.string().optional(),
    finishReason: finishReason.optional(),
    iterations: z.number().int(),
    usage: usage.extend({ sandboxCpuMs: z.number().optional() }).optional(),
  }),
};

type Variants = (typeof eventSchemas)[keyof typeof eventSchemas];

/** Every stored event: one of the schemas above, told apart by `type`. */
export const EventSchema = z
  .discriminatedUnion("type", Object.values(eventSchemas) as unknown as [Variants, ...Variants[]])
  .meta({ description: "an event of a run (docs/events.md); `type` tells which" });

/** A live reader's piece of streamed text (never stored, no seq; docs/events.md, "Live text"). */
export const TextDeltaEventSchema = z.object({
  type: z.literal("text-delta"),
  iteration: z.number().int(),
  delta: z.string(),
  sofar: z
    .literal(true)
    .optional()
    .meta({ description: "set on the first delta of a reader that joined mid-answer: `delta` is the whole answer so far" }),
  timestampMs: z.number(),
  sessionId: z.string(),
  inferenceId: z.string(),
});

/** What the `data:` of one Server-Sent Event of a run's stream holds. */
export const StreamEventSchema = z
  .union([EventSchema, TextDeltaEventSchema])
  .meta({ description: "the data: of one SSE message: a stored event (id: its seq), or a text-delta (no id)" });

// The schema and types.ts describe the same events: assignable both ways, and with the same fields for each type
// (optional ones included). Either line fails to compile, naming the event type, when the two drift apart.
type SchemaEvent = z.output<typeof EventSchema>;
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
type Drifted = {
  [T in HookboxEvent["type"]]: SameKeys<Extract<HookboxEvent, { type: T }>, Extract<SchemaEvent, { type: T }>> extends true ? never : T;
}[HookboxEvent["type"]];
export const eventsInStep: [Drifted] extends [never] ? true : Drifted = true;
export const eventSchemaFitsType = (event: SchemaEvent): HookboxEvent => event;
export const eventTypeFitsSchema = (event: HookboxEvent): z.input<typeof EventSchema> => event;
export const textDeltaFitsSchema = (event: TextDeltaEvent): z.output<typeof TextDeltaEventSchema> => event;
