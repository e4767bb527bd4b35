import type { Context } from "hono";
import { z } from "zod";
import { JsonObjectSchema, JsonSchema } from "../turns/json.js";
import { TagsSchema } from "../contracts/context.js";
import { ApiError } from "./api-error.js";
import { jsonPath } from "../contracts/json-path.js";

/* Request bodies, validated with zod; unknown fields are refused so a typo is not silently ignored. */

const UserContextInput = z.object({ userId: z.string().optional(), projectId: z.string().optional() }).catchall(JsonSchema);

const RunDefaultsSchema = z.strictObject({
  step: z.boolean().optional(),
  maxIterations: z.number().int().positive().max(1000).optional(),
  pauseTimeoutMs: z.number().int().positive().optional(),
  tags: TagsSchema.optional(),
  userContext: UserContextInput.optional(),
});

export const CreateSessionBody = z.strictObject({ defaults: RunDefaultsSchema.optional() });

export const StartRunBody = z.strictObject({
  prompt: z.string().min(1).max(100_000),
  userContext: UserContextInput.optional(),
  step: z.boolean().optional(),
  tags: TagsSchema.optional(),
  maxIterations: z.number().int().positive().max(1000).optional(),
  pauseTimeoutMs: z.number().int().positive().optional(),
});

export const ContinueBody = z.strictObject({ pauseId: z.string().min(1).max(200) });

export const ApprovalBody = z.strictObject({
  decision: z.enum(["approve", "reject"]),
  args: JsonObjectSchema.optional(),
  reason: z.string().max(2000).optional(),
});

export const ForkBody = z.strictObject({ runId: z.string().min(1).optional() });

/** Reads and validates a JSON body (the size limit is enforced before this runs). An empty body reads as `{}` when allowed. */
export async function readBody<T extends z.ZodType>(c: Context, schema: T, options: { emptyAs?: unknown } = {}): Promise<z.infer<T>> {
  const text = await c.req.text();
  let value: unknown;
  if (text.trim() === "" && options.emptyAs !== undefined) {
    value = options.emptyAs;
  } else {
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ApiError(400, "INVALID_JSON", `the request body is not valid JSON: ${(error as Error).message}`, "$");
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = jsonPath(issue.path);
    const message =
      issue.code === "unrecognized_keys"
        ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`
        : issue.message;
    throw new ApiError(400, "VALIDATION", `${path}: ${message}`, path);
  }
  return parsed.data;
}
