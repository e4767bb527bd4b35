import { hookContractError, HookboxError } from "../errors.js";
import { jsonPath } from "../contracts/json-path.js";
import { validateHookReturn } from "../contracts/validate-hook-return.js";
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

/** Text from the sandbox ("" = returned nothing) back to a value; it was produced by JSON.stringify inside. */
export function parseGuestJson(text: string): Json | undefined {
  return text === "" ? undefined : (JSON.parse(text) as Json);
}

/** A sandboxed hook's return: the fast path for JSON.parse output first, the full contract check otherwise. */
export function validateGuestHookReturn<H extends HookName>(script: string, hook: H, value: Json | undefined): HookReturns[H] {
  const fast = fastHookReturnSchemas[hook].safeParse(value);
  if (fast.success) return fast.data;
  return validateHookReturn(script, hook, value);
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
