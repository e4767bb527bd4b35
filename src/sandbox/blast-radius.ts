import { HookboxError } from "../errors.js";

/*
 * The blast radius of a shared worker taken over (docs/sandbox.md, "Blast radius"): at most
 * maxTenantsPerWorker tenants, all of one cordon.
 */

/*
 * 64 tenants per shared worker: a worker's own ~55 MB spread over 64 tenants adds under 1 MB to each one's
 * ~1.4 MB isolate (rss_per_tenant_mb), while a worker taken over reaches at most 64 tenants of one cordon.
 */
export const DEFAULT_MAX_TENANTS_PER_WORKER = 64;

/** The cordon of tenants given none. */
export const DEFAULT_CORDON = "default";

const CORDON = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A cordon is an operator's name for a tier: 1-64 letters, digits, '_', '.', '-'. */
export function checkCordon(cordon: string): void {
  if (typeof cordon !== "string" || !CORDON.test(cordon))
    throw new HookboxError("USAGE", `cordon ${JSON.stringify(cordon)}: expected 1-64 letters, digits, '_', '.', '-'`);
}

export function checkMaxTenantsPerWorker(value: number): void {
  if (!Number.isInteger(value) || value < 1)
    throw new HookboxError("USAGE", `maxTenantsPerWorker: expected a positive integer, got ${String(value)}`);
}
