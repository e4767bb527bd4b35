import { rowToRun, type RunRow } from "../rows.js";
import type { RunRecord } from "../types.js";
import type { DeploymentRecord, HookCallRecord, RunFilter, ScriptSummary, ScriptVersionRecord } from "../policy-types.js";
import { toDeployment, toHookCall, toVersion, type DeploymentRow, type HookCallRow, type VersionRow } from "../policy-rows.js";
import type { WriteOptions } from "../quota.js";
import { scriptVersionBytes } from "../row-bytes.js";
import type { PolicyTables } from "../with-policy-tables.js";
import type { Queryable } from "./pg-driver.js";
import type { PgTransaction } from "./pg-commit.js";

/* The PostgreSQL side of PolicyStore: script versions, deployments, hook chain records, run search. */

/** Queues a write for the store's next group commit (postgres-store.ts). */
export type PgSubmit = <T>(what: string, tenant: string | undefined, apply: (tx: PgTransaction) => Promise<T>) => Promise<T>;

export class PgPolicyTables implements PolicyTables {
  constructor(
    private readonly db: Queryable,
    private readonly submit: PgSubmit,
    /** Waits for queued writes: a read sees every write issued before it. */
    private readonly settle: () => Promise<unknown>,
  ) {}

  async createScriptVersion(version: Omit<ScriptVersionRecord, "version">, options?: WriteOptions): Promise<ScriptVersionRecord> {
    return this.submit(`store version of script ${version.name}`, version.tenant, async (tx) => {
      // Numbers come from max + 1: nodes that upload the same script at once take turns on a lock of its name.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`hookbox:script:${version.tenant}:${version.name}`]);
      const row = (
        await tx.query<VersionRow>(
          `INSERT INTO script_versions (tenant, name, version, entry, files, bundle_hash, warnings, created_ms)
           VALUES ($1, $2, (SELECT coalesce(max(version), 0) + 1 FROM script_versions WHERE tenant = $1 AND name = $2), $3, $4, $5, $6, $7)
           RETURNING *`,
          [
            version.tenant,
            version.name,
            version.entry,
            JSON.stringify(version.files),
            version.bundleHash,
            JSON.stringify(version.warnings),
            version.createdMs,
          ],
        )
      ).rows[0];
      await tx.charge(version.tenant, scriptVersionBytes(version), options?.maxTenantBytes);
      return toVersion(row);
    });
  }

  async getScriptVersion(tenant: string, name: string, version: number): Promise<ScriptVersionRecord | undefined> {
    await this.settle();
    const row = (
      await this.db.query<VersionRow>("SELECT * FROM script_versions WHERE tenant = $1 AND name = $2 AND version = $3", [
        tenant,
        name,
        version,
      ])
    ).rows[0];
    return row && toVersion(row);
  }

  async listScriptVersions(tenant: string, name: string): Promise<ScriptVersionRecord[]> {
    await this.settle();
    return (
      await this.db.query<VersionRow>("SELECT * FROM script_versions WHERE tenant = $1 AND name = $2 ORDER BY version", [tenant, name])
    ).rows.map(toVersion);
  }

  async listScripts(tenant: string): Promise<ScriptSummary[]> {
    await this.settle();
    return (
      await this.db.query<ScriptSummary>(
        `SELECT name, version AS "latestVersion", created_ms AS "createdMs" FROM script_versions v
         WHERE tenant = $1 AND version = (SELECT max(version) FROM script_versions WHERE tenant = v.tenant AND name = v.name)
         ORDER BY name COLLATE "C"`,
        [tenant],
      )
    ).rows;
  }

  async createDeployment(deployment: Omit<DeploymentRecord, "number">, options?: { onlyIfFirst?: boolean }): Promise<DeploymentRecord> {
    return this.submit(`store deployment ${deployment.id}`, undefined, async (tx) => {
      // One tenant's deployments are numbered one at a time; under the same lock a first one finds any other node's.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`hookbox:deployments:${deployment.tenant}`]);
      if (options?.onlyIfFirst) {
        const current = (
          await tx.query<DeploymentRow>("SELECT * FROM deployments WHERE tenant = $1 ORDER BY number DESC LIMIT 1", [deployment.tenant])
        ).rows[0];
        if (current) return toDeployment(current);
      }
      const row = (
        await tx.query<DeploymentRow>(
          `INSERT INTO deployments (id, tenant, number, scripts, shadow, from_config, previous_id, rollback_of, created_ms)
           VALUES ($1, $2, (SELECT coalesce(max(number), 0) + 1 FROM deployments WHERE tenant = $2), $3, $4, $5, $6, $7, $8) RETURNING *`,
          [
            deployment.id,
            deployment.tenant,
            JSON.stringify(deployment.scripts),
            JSON.stringify(deployment.shadow),
            deployment.fromConfig,
            deployment.previousId ?? null,
            deployment.rollbackOf ?? null,
            deployment.createdMs,
          ],
        )
      ).rows[0];
      return toDeployment(row);
    });
  }

  async getDeployment(tenant: string, id: string): Promise<DeploymentRecord | undefined> {
    await this.settle();
    const row = (await this.db.query<DeploymentRow>("SELECT * FROM deployments WHERE tenant = $1 AND id = $2", [tenant, id])).rows[0];
    return row && toDeployment(row);
  }

  async listDeployments(tenant: string): Promise<DeploymentRecord[]> {
    await this.settle();
    return (await this.db.query<DeploymentRow>("SELECT * FROM deployments WHERE tenant = $1 ORDER BY number", [tenant])).rows.map(
      toDeployment,
    );
  }

  async currentDeployment(tenant: string): Promise<DeploymentRecord | undefined> {
    await this.settle();
    const row = (await this.db.query<DeploymentRow>("SELECT * FROM deployments WHERE tenant = $1 ORDER BY number DESC LIMIT 1", [tenant]))
      .rows[0];
    return row && toDeployment(row);
  }

  async listHookCalls(runId: string): Promise<HookCallRecord[]> {
    await this.settle();
    return (await this.db.query<HookCallRow>("SELECT * FROM hook_calls WHERE run_id = $1 ORDER BY idx", [runId])).rows.map(toHookCall);
  }

  async findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]> {
    await this.settle();
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (condition: (parameter: string) => string, value: unknown) => {
      values.push(value);
      where.push(condition(`$${values.length}`));
    };
    if (filter.tenant !== undefined) add((p) => `s.tenant = ${p}`, filter.tenant);
    if (filter.sinceMs !== undefined) add((p) => `r.started_ms >= ${p}`, filter.sinceMs);
    if (filter.deploymentId !== undefined) add((p) => `r.deployment_id = ${p}`, filter.deploymentId);
    if (filter.sessionIds !== undefined) add((p) => `r.session_id = ANY(${p}::text[])`, filter.sessionIds);
    const rows = await this.db.query<RunRow & { tenant: string }>(
      `SELECT r.*, s.tenant AS tenant FROM runs r JOIN sessions s ON s.id = r.session_id
       ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY r.started_ms, r.ord`,
      values,
    );
    return rows.rows.map((row) => ({ ...rowToRun(row), tenant: row.tenant }));
  }
}
