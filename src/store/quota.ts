import { HookboxError } from "../errors.js";

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
