import type { z } from "zod";
import { hookContractError, HookboxError } from "../errors.js";
import type { Json } from "../turns/json.js";
import { TurnSchema, type Turn } from "../turns/turn.js";
import type { HookName } from "../turns/keys.gen.js";
import { hookReturnSchemas, type HookReturns } from "../contracts/hook-returns.js";
import { HOOK_NAMES } from "../turns/keys.gen.js";
import { trustJsonLeaves } from "./trusted-json.js";

/** The contracts, with JSON leaves trusted (see trusted-json.ts): the fast path for values from JSON.parse. */
const fastHookReturnSchemas = Object.fromEntries(
  HOOK_NAMES.map((hook) => [hook, trustJsonLeaves(hookReturnSchemas[hook])]),
) as typeof hookReturnSchemas;

/** `$.blocks[0].payload["a b"]` from a zod issue path. */
export function jsonPath(path: readonly PropertyKey[]): string {
  let out = "$";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) out += `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** Text from the sandbox ("" = returned nothing) back to a value; it was produced by JSON.stringify inside. */
export function parseGuestJson(text: string): Json | undefined {
  return text === "" ? undefined : (JSON.parse(text) as Json);
}

function firstIssue(schema: z.ZodType, value: unknown): { path: string; message: string } | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  return { path: jsonPath(issue?.path ?? []), message: issue?.message ?? "invalid" };
}

/**
 * A hook return checked against its contract. For union contracts the branch is chosen by `action`, so
 * the error names the real bad field (`$.reason`) rather than "no union member matched".
 */
export function validateHookReturn<H extends HookName>(script: string, hook: H, value: Json | undefined): HookReturns[H] {
  const fast = fastHookReturnSchemas[hook].safeParse(value);
  if (fast.success) return fast.data;
  const schema = hookReturnSchemas[hook];
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const options = ((schema as unknown as { options?: z.ZodType[] }).options ?? []).filter((option) => !option.safeParse(undefined).success);
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const action = (value as Record<string, unknown>).action;
    const matching = options.filter((option) => {
      const actionSchema = (option as unknown as { shape?: Record<string, z.ZodType> }).shape?.action;
      return action === undefined ? actionSchema === undefined : actionSchema !== undefined && actionSchema.safeParse(action).success;
    });
    if (matching.length === 0) {
      const known = options
        .map((option) => (option as unknown as { shape?: Record<string, { value?: unknown }> }).shape?.action?.value)
        .filter((name) => name !== undefined);
      throw hookContractError(
        script,
        hook,
        "$.action",
        `unknown action ${JSON.stringify(action)} (expected ${known.map((name) => JSON.stringify(name)).join(" | ")})`,
      );
    }
    const issue = firstIssue(matching[0], value);
    if (issue !== undefined) throw hookContractError(script, hook, issue.path, issue.message);
  }
  const issue = firstIssue(schema, value) ?? { path: "$", message: "invalid" };
  throw hookContractError(
    script,
    hook,
    issue.path,
    value === null || typeof value !== "object"
      ? `expected nothing or an object, got ${value === null ? "null" : typeof value}`
      : issue.message,
  );
}

export function validateMiddlewareTurn(script: string, middleware: string, value: Json | undefined): Turn {
  if (value === undefined) {
    throw new HookboxError(
      "HOOK_CONTRACT",
      `${script}: middleware ${middleware} returned nothing: return the turn (usually \`return await next(turn)\`)`,
      { script, middleware, path: "$" },
    );
  }
  const parsed = TurnSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw hookContractError(script, `middleware ${middleware}`, jsonPath(issue?.path ?? []), issue?.message ?? "not a turn");
  }
  return parsed.data as Turn;
}
