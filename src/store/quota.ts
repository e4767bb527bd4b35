import { HookboxError } from "../errors.js";

/**
 * Options of a write that adds bytes to a tenant's stored total. With `maxTenantBytes`, a write that would
 * take the tenant's total over it is refused with STORE_QUOTA and nothing of it is kept (the check and the
 * write are one transaction, so concurrent writers cannot overshoot together).
 */
export interface WriteOptions {
  maxTenantBytes?: number;
}

/** The error of a write refused by the tenant's store quota (one message for every store implementation). */
export function quotaError(tenant: string, storedBytes: number, addedBytes: number, maxTenantBytes: number): HookboxError {
  return new HookboxError(
    "STORE_QUOTA",
    `tenant ${tenant} is over its store quota: ${storedBytes} bytes stored + ${addedBytes} more would exceed ${maxTenantBytes}`,
    { tenant, storedBytes, addedBytes, maxTenantBytes },
  );
}

/** True when `addedBytes` more would take `storedBytes` over the quota (no quota: never). */
export function overQuota(storedBytes: number, addedBytes: number, maxTenantBytes: number | undefined): boolean {
  return maxTenantBytes !== undefined && storedBytes + addedBytes > maxTenantBytes;
}
