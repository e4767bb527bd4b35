import { prepare, type SqliteDatabase } from "./sqlite-driver.js";
import { rowToRun, type RunRow } from "./rows.js";
import type { RunRecord } from "./types.js";
import type { DeploymentRecord, HookCallRecord, RunFilter, ScriptSummary, ScriptVersionRecord } from "./policy-types.js";
import { toDeployment, toHookCall, toVersion, type DeploymentRow, type HookCallRow, type VersionRow } from "./policy-rows.js";
import type { WriteOptions } from "./quota.js";
import { scriptVersionBytes } from "./row-bytes.js";
import type { SqliteBatch } from "./sqlite-batch.js";
import type { PolicyTables } from "./with-policy-tables.js";

/** Queues a write for the store's next group commit (sqlite.ts). */
export type SubmitWrite = <T>(what: string, apply: (batch: SqliteBatch) => T) => Promise<T>;

/* The SQLite side of PolicyStore (tables of migration 2); SqliteStore delegates to it. */

export class SqlitePolicyTables implements PolicyTables {
  private readonly statements;
  /** Deployment writes queued and not yet settled: while there are any, currentDeployment commits the queue first. */
  private queuedDeployments = 0;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly submit: SubmitWrite,
    /** Flushes queued writes: a read sees every write issued before it. */
    private readonly settle: () => void,
  ) {
    // `+?`: a parameter hidden from the query planner (sqlite-statements.ts says why).
    this.statements = {
      insertVersion: prepare(
        db,
        `INSERT INTO script_versions (tenant, name, version, entry, files, bundle_hash, warnings, created_ms)
         VALUES (?, ?, (SELECT coalesce(max(version), 0) + 1 FROM script_versions WHERE tenant = +? AND name = +?), ?, ?, ?, ?, ?)
         RETURNING *`,
      ),
      getVersion: prepare(db, "SELECT * FROM script_versions WHERE tenant = ? AND name = ? AND version = ?"),
      listVersions: prepare(db, "SELECT * FROM script_versions WHERE tenant = +? AND name = +? ORDER BY version"),
      // The latest version of each name: versions only grow, so its row is the one with the highest number.
      listScripts: prepare(
        db,
        `SELECT name, version AS latestVersion, created_ms AS createdMs FROM script_versions AS v
         WHERE tenant = +? AND version = (SELECT MAX(version) FROM script_versions WHERE tenant = v.tenant AND name = v.name)
         ORDER BY name`,
      ),
      insertDeployment: prepare(
        db,
        `INSERT INTO deployments (id, tenant, number, scripts, shadow, from_config, previous_id, rollback_of, created_ms)
         VALUES (?, ?, (SELECT coalesce(max(number), 0) + 1 FROM deployments WHERE tenant = +?), ?, ?, ?, ?, ?, ?) RETURNING *`,
      ),
      getDeployment: prepare(db, "SELECT * FROM deployments WHERE tenant = ? AND id = ?"),
      listDeployments: prepare(db, "SELECT * FROM deployments WHERE tenant = +? ORDER BY number"),
      currentDeployment: prepare(db, "SELECT * FROM deployments WHERE tenant = +? ORDER BY number DESC LIMIT 1"),
      listHookCalls: prepare(db, "SELECT * FROM hook_calls WHERE run_id = +? ORDER BY idx"),
    };
  }

  async createScriptVersion(version: Omit<ScriptVersionRecord, "version">, options?: WriteOptions): Promise<ScriptVersionRecord> {
    const files = JSON.stringify(version.files);
    const warnings = JSON.stringify(version.warnings);
    return this.submit(`store version of script ${version.name}`, (batch) => {
      const row = this.statements.insertVersion.get(
        version.tenant,
        version.name,
        version.tenant,
        version.name,
        version.entry,
        files,
        version.bundleHash,
        warnings,
        version.createdMs,
      ) as VersionRow;
      batch.charge(version.tenant, scriptVersionBytes(version), options?.maxTenantBytes);
      return toVersion(row);
    });
  }

  async getScriptVersion(tenant: string, name: string, version: number): Promise<ScriptVersionRecord | undefined> {
    this.settle();
    const row = this.statements.getVersion.get(tenant, name, version) as VersionRow | undefined;
    return row && toVersion(row);
  }

  async listScriptVersions(tenant: string, name: string): Promise<ScriptVersionRecord[]> {
    this.settle();
    return (this.statements.listVersions.all(tenant, name) as VersionRow[]).map(toVersion);
  }

  async listScripts(tenant: string): Promise<ScriptSummary[]> {
    this.settle();
    return this.statements.listScripts.all(tenant) as ScriptSummary[];
  }

  async createDeployment(deployment: Omit<DeploymentRecord, "number">, options?: { onlyIfFirst?: boolean }): Promise<DeploymentRecord> {
    this.queuedDeployments++;
    try {
      return await this.insertDeployment(deployment, options);
    } finally {
      this.queuedDeployments--;
    }
  }

  private insertDeployment(deployment: Omit<DeploymentRecord, "number">, options?: { onlyIfFirst?: boolean }): Promise<DeploymentRecord> {
    return this.submit(`store deployment ${deployment.id}`, () => {
      const current = options?.onlyIfFirst
        ? (this.statements.currentDeployment.get(deployment.tenant) as DeploymentRow | undefined)
        : undefined;
      if (current) return toDeployment(current);
      return toDeployment(
        this.statements.insertDeployment.get(
          deployment.id,
          deployment.tenant,
          deployment.tenant,
          JSON.stringify(deployment.scripts),
          JSON.stringify(deployment.shadow),
          deployment.fromConfig ? 1 : 0,
          deployment.previousId ?? null,
          deployment.rollbackOf ?? null,
          deployment.createdMs,
        ) as DeploymentRow,
      );
    });
  }

  async getDeployment(tenant: string, id: string): Promise<DeploymentRecord | undefined> {
    this.settle();
    const row = this.statements.getDeployment.get(tenant, id) as DeploymentRow | undefined;
    return row && toDeployment(row);
  }

  async listDeployments(tenant: string): Promise<DeploymentRecord[]> {
    this.settle();
    return (this.statements.listDeployments.all(tenant) as DeploymentRow[]).map(toDeployment);
  }

  async currentDeployment(tenant: string): Promise<DeploymentRecord | undefined> {
    // Every run start reads this. A deployments row is only ever inserted, by createDeployment, and never changed or
    // deleted, so while no deployment write is queued no queued write (a run's, a session's) can hold or change what
    // this reads: it reads without committing the queue first (the next group commit does that anyway, in one
    // transaction with the rest of its turn's writes). Another process's deploy is committed in that process, so this
    // read sees it either way (docs/policy-lifecycle.md: the next run on every node uses it).
    if (this.queuedDeployments > 0) this.settle();
    const row = this.statements.currentDeployment.get(tenant) as DeploymentRow | undefined;
    return row && toDeployment(row);
  }

  async listHookCalls(runId: string): Promise<HookCallRecord[]> {
    this.settle();
    return (this.statements.listHookCalls.all(runId) as HookCallRow[]).map(toHookCall);
  }

  async findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]> {
    this.settle();
    const where: string[] = [];
    const values: (string | number)[] = [];
    if (filter.tenant !== undefined) where.push("s.tenant = ?") && values.push(filter.tenant);
    if (filter.sinceMs !== undefined) where.push("r.started_ms >= ?") && values.push(filter.sinceMs);
    if (filter.deploymentId !== undefined) where.push("r.deployment_id = ?") && values.push(filter.deploymentId);
    if (filter.sessionIds !== undefined) {
      where.push(`r.session_id IN (${filter.sessionIds.map(() => "?").join(", ") || "NULL"})`);
      values.push(...filter.sessionIds);
    }
    const rows = prepare(
      this.db,

      `SELECT r.*, s.tenant AS tenant FROM runs r JOIN sessions s ON s.id = r.session_id
         ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY r.started_ms, r.rowid`,
    ).all(...values) as (RunRow & { tenant: string })[];
    return rows.map((row) => ({ ...rowToRun(row), tenant: row.tenant }));
  }
}
