import { hookContractError, HookboxError } from "../errors.js";
import { validateHookReturn } from "../contracts/validate-hook-return.js";
import { checkParsedTurn } from "../contracts/turn-shape.js";
import type { Json } from "../turns/json.js";
import type { Turn } from "../turns/turn.js";
import type { HookName } from "../turns/keys.gen.js";
import { hookReturnSchemas, type HookReturns } from "../contracts/hook-returns.js";
import { HOOK_NAMES } from "../turns/keys.gen.js";
import { trustJsonLeaves } from "./trusted-json.js";

/** The contracts, with JSON leaves trusted (see trusted-json.ts): the fast path for values from JSON.parse. */
const fastHookReturnSchemas = Object.fromEntries(
  HOOK_NAMES.map((hook) => [hook, trustJsonLeaves(hookReturnSchemas[hook])]),
) as typeof hookReturnSchemas;

/** Every key some branch of each hook's contract allows (the contracts are strict objects of a few keys). */
const allowedKeys = Object.fromEntries(
  HOOK_NAMES.map((hook) => {
    const options = (hookReturnSchemas[hook] as unknown as { options?: { shape?: Record<string, unknown> }[] }).options ?? [];
    return [hook, new Set(options.flatMap((option) => Object.keys(option.shape ?? {})))];
  }),
) as Record<HookName, Set<string>>;

/**
 * A key no branch allows is an error whatever the branch; found in one pass before zod, which would otherwise
 * list thousands of unknown keys once per branch of the union.
 */
function refuseStrayKeys(script: string, hook: HookName, value: Json | undefined): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  const stray = Object.keys(value).filter((key) => !allowedKeys[hook].has(key));
  if (stray.length === 0) return;
  const named = stray.slice(0, 5).map((key) => JSON.stringify(key.slice(0, 40)));
  const more = stray.length > 5 ? ` and ${stray.length - 5} more` : "";
  throw hookContractError(script, hook, "$", `unknown field${stray.length > 1 ? "s" : ""} ${named.join(", ")}${more}`);
}

/** Text from the sandbox ("" = returned nothing) back to a value; it was produced by JSON.stringify inside. */
export function parseGuestJson(text: string): Json | undefined {
  return text === "" ? undefined : (JSON.parse(text) as Json);
}

function isJsonObject(value: Json | undefined): value is { [key: string]: Json } {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The returns almost every hook makes (nothing; `{ action: "proceed" }` with or without `args`, from
 * `beforeToolCall`; `{ result?, error? }` from `afterToolCall`), checked by hand before zod, whose union parse
 * was ~2% of the host's busy CPU in the loop bench. True only for a value of JSON.parse that the trusted-leaf
 * contract accepts as it is (zod would return an equal copy); anything else goes to the contract.
 */
export function isCommonHookReturn(hook: HookName, value: Json | undefined): boolean {
  if (value === undefined) return true; // every hook may return nothing
  if (!isJsonObject(value)) return false;
  const keys = Object.keys(value);
  if (hook === "beforeToolCall") {
    if (value.action !== "proceed") return false;
    if (keys.length === 1) return true;
    return keys.length === 2 && Object.hasOwn(value, "args") && isJsonObject(value.args);
  }
  if (hook === "afterToolCall") {
    for (const key of keys) {
      if (key === "result") continue;
      if (key !== "error") return false;
      if (value.error !== null && typeof value.error !== "string") return false;
    }
    return true;
  }
  return false;
}

/**
 * A sandboxed hook's return, checked with the trusted-leaf contracts only: the value is JSON.parse output,
 * so neither a valid nor a rejected return walks into its payloads (a rejected 1 MiB `args` costs what a
 * small one does).
 */
export function validateGuestHookReturn<H extends HookName>(script: string, hook: H, value: Json | undefined): HookReturns[H] {
  if (isCommonHookReturn(hook, value)) return value as HookReturns[H];
  refuseStrayKeys(script, hook, value);
  const fast = fastHookReturnSchemas[hook].safeParse(value);
  if (fast.success) return fast.data;
  return validateHookReturn(script, hook, value, fastHookReturnSchemas[hook]);
}

export function validateMiddlewareTurn(script: string, middleware: string, value: Json | undefined): Turn {
  if (value === undefined) {
    throw new HookboxError(
      "HOOK_CONTRACT",
      `${script}: middleware ${middleware} returned nothing: return the turn (usually \`return await next(turn)\`)`,
      { script, middleware, path: "$" },
    );
  }
  // The one check of a script middleware's turn: the loop's chain does not check it again.
  const problem = checkParsedTurn(value);
  if (problem) throw hookContractError(script, `middleware ${middleware}`, problem.path, problem.message);
  return value as unknown as Turn;
}
