import { prepare, type SqliteDatabase } from "./sqlite-driver.js";
import { HookboxError } from "../errors.js";
import { overQuota, quotaError } from "./quota.js";
import type { WriteOptions } from "./types.js";

/**
 * The `tenant_usage` table: bytes of JSON text each tenant keeps in the store. Every write adds its bytes
 * here inside the write's own transaction, so the total is exact and a refused write leaves nothing.
 */
export class SqliteTenantUsage {
  private readonly statements;
  /** Run id -> tenant; a run never changes tenant, so this is never stale. */
  private readonly tenantOfRun = new Map<string, string>();

  constructor(db: SqliteDatabase) {
    this.statements = {
      ensure: prepare(db, "INSERT INTO tenant_usage (tenant, bytes) VALUES (?, 0) ON CONFLICT (tenant) DO NOTHING"),
      get: prepare(db, "SELECT bytes FROM tenant_usage WHERE tenant = ?"),
      add: prepare(db, "UPDATE tenant_usage SET bytes = bytes + ? WHERE tenant = ?"),
      runTenant: prepare(db, "SELECT s.tenant FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = ?"),
    };
  }

  storedBytes(tenant: string): number {
    return (this.statements.get.get(tenant) as { bytes: number } | undefined)?.bytes ?? 0;
  }

  /** Adds `bytes` to `tenant`, or throws STORE_QUOTA (call inside the write's transaction, before the write). */
  charge(tenant: string, bytes: number, options: WriteOptions = {}): void {
    this.statements.ensure.run(tenant);
    const stored = this.storedBytes(tenant);
    if (overQuota(stored, bytes, options.maxTenantBytes)) throw quotaError(tenant, stored, bytes, options.maxTenantBytes!);
    this.statements.add.run(bytes, tenant);
  }

  chargeRun(runId: string, bytes: number, options: WriteOptions = {}): void {
    this.charge(this.tenantOf(runId), bytes, options);
  }

  private tenantOf(runId: string): string {
    let tenant = this.tenantOfRun.get(runId);
    if (tenant === undefined) {
      tenant = (this.statements.runTenant.get(runId) as { tenant: string } | undefined)?.tenant;
      if (tenant === undefined) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
      this.tenantOfRun.set(runId, tenant);
    }
    return tenant;
  }
}
