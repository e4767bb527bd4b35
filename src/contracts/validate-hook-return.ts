import type { z } from "zod";
import { hookContractError } from "../errors.js";
import type { HookName } from "../turns/keys.gen.js";
import { hookReturnSchemas, type HookReturns } from "./hook-returns.js";
import { jsonPath } from "./json-path.js";

function firstIssue(schema: z.ZodType, value: unknown): { path: string; message: string } | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0];
  return { path: jsonPath(issue?.path ?? []), message: issue?.message ?? "invalid" };
}

/**
 * A hook return checked against its contract. For union contracts the branch is chosen by `action`, so
 * the error names the real bad field (`$.reason`) rather than "no union member matched". One check for host
 * and script hooks alike; `schema` is the contract to check (the sandbox passes its trusted-leaf copy).
 */
export function validateHookReturn<H extends HookName>(
  script: string,
  hook: H,
  value: unknown,
  schema: z.ZodType<HookReturns[H]> = hookReturnSchemas[hook],
): HookReturns[H] {
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
