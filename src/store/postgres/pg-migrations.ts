import { HookboxError } from "../../errors.js";
import type { Pool } from "./pg-driver.js";
import { pgStoreError } from "./pg-driver.js";

/*
 * The PostgreSQL store's schema, versioned like the SQLite one (src/store/migrations.ts) and of the same shape
 * (docs/server.md, "Schema"), plus what many nodes need: run leases, control messages, shared rate buckets.
 * `hookbox_schema` holds the applied version. Several nodes may start at once: each migrates inside one
 * transaction that first takes a transaction-level advisory lock, so one migrates and the others then find
 * the schema current. Append new migrations; never edit a released one.
 */

export interface PgMigration {
  version: number;
  description: string;
  sql: string;
}

/** The advisory lock key migrations hold ("Hkbx" and 1). */
const MIGRATION_LOCK = 0x486b6278_0001;

export const PG_MIGRATIONS: PgMigration[] = [
  {
    version: 1,
    description: "sessions and their logs, runs with leases, events, snapshots, pauses, journal, policy, usage, kv, controls, rate buckets",
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        ord BIGINT GENERATED ALWAYS AS IDENTITY,
        tenant TEXT NOT NULL,
        tenant_config TEXT NOT NULL,
        defaults TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        forked_from TEXT,
        initial_turn TEXT,
        log_length INTEGER NOT NULL DEFAULT 0,
        base TEXT
      );
      CREATE INDEX sessions_by_tenant ON sessions (tenant, created_ms, ord);
      CREATE TABLE session_log (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        pos INTEGER NOT NULL,
        block TEXT NOT NULL,
        PRIMARY KEY (session_id, pos)
      );
      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        ord BIGINT GENERATED ALWAYS AS IDENTITY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        inference_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        options TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        error_code TEXT,
        iterations INTEGER NOT NULL DEFAULT 0,
        started_ms BIGINT NOT NULL,
        finished_ms BIGINT,
        last_seq INTEGER NOT NULL DEFAULT 0,
        owner_pid INTEGER,
        owner_instance TEXT,
        deployment TEXT,
        deployment_id TEXT,
        epoch INTEGER NOT NULL DEFAULT 1,
        owner_node TEXT,
        lease_expires_ms BIGINT
      );
      CREATE INDEX runs_by_session ON runs (session_id, started_ms, ord);
      CREATE INDEX runs_by_deployment ON runs (deployment_id);
      -- One active run per session, whichever node starts it.
      CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE status = 'running';
      -- What a node looking for runs to take over scans.
      CREATE INDEX runs_leases ON runs (lease_expires_ms) WHERE status = 'running';
      CREATE TABLE events (
        run_id TEXT NOT NULL REFERENCES runs (id),
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      CREATE TABLE snapshots (
        run_id TEXT NOT NULL REFERENCES runs (id),
        idx INTEGER NOT NULL,
        phase TEXT NOT NULL,
        blocks TEXT NOT NULL,
        head TEXT,
        block_bytes INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        iterations INTEGER NOT NULL,
        created_ms BIGINT NOT NULL,
        PRIMARY KEY (run_id, idx)
      );
      CREATE TABLE pauses (
        pause_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (id),
        phase TEXT NOT NULL,
        deadline_ms BIGINT NOT NULL,
        pending TEXT NOT NULL,
        opened_ms BIGINT NOT NULL,
        closed_reason TEXT
      );
      CREATE INDEX pauses_by_run ON pauses (run_id);
      CREATE TABLE tool_results (
        run_id TEXT NOT NULL REFERENCES runs (id),
        call_id TEXT NOT NULL,
        block TEXT NOT NULL,
        PRIMARY KEY (run_id, call_id)
      );
      CREATE TABLE tenant_usage (
        tenant TEXT PRIMARY KEY,
        bytes BIGINT NOT NULL
      );
      CREATE TABLE script_versions (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        entry TEXT NOT NULL,
        files TEXT NOT NULL,
        bundle_hash TEXT NOT NULL,
        warnings TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant, name, version)
      );
      CREATE TABLE deployments (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        number INTEGER NOT NULL,
        scripts TEXT NOT NULL,
        shadow TEXT NOT NULL,
        from_config BOOLEAN NOT NULL,
        previous_id TEXT,
        rollback_of TEXT,
        created_ms BIGINT NOT NULL,
        UNIQUE (tenant, number)
      );
      CREATE TABLE hook_calls (
        run_id TEXT NOT NULL REFERENCES runs (id),
        idx INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        hook TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        shadow BOOLEAN NOT NULL,
        verdict TEXT NOT NULL,
        decision TEXT NOT NULL,
        payload TEXT,
        PRIMARY KEY (run_id, idx)
      );
      CREATE TABLE usage_ledger (
        tenant TEXT NOT NULL,
        run_id TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        runs INTEGER NOT NULL,
        inferences INTEGER NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        tool_calls INTEGER NOT NULL,
        sandbox_cpu_ms DOUBLE PRECISION NOT NULL
      );
      CREATE INDEX usage_by_tenant ON usage_ledger (tenant, at_ms);
      CREATE INDEX usage_by_run ON usage_ledger (run_id);
      CREATE TABLE usage_totals (
        tenant TEXT PRIMARY KEY,
        runs BIGINT NOT NULL,
        inferences BIGINT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        tool_calls BIGINT NOT NULL,
        sandbox_cpu_ms DOUBLE PRECISION NOT NULL
      );
      CREATE TABLE kv (
        tenant TEXT NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        value TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        expires_ms BIGINT,
        PRIMARY KEY (tenant, key)
      );
      CREATE INDEX kv_expiry ON kv (tenant, expires_ms) WHERE expires_ms IS NOT NULL;
      CREATE TABLE kv_usage (
        tenant TEXT PRIMARY KEY,
        bytes BIGINT NOT NULL
      );
      -- Continue, approve and cancel on their way from the node that was asked to the node that owns the run.
      CREATE TABLE run_controls (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id TEXT NOT NULL,
        node TEXT NOT NULL,
        body TEXT NOT NULL,
        reply TEXT,
        created_ms BIGINT NOT NULL
      );
      CREATE INDEX run_controls_by_node ON run_controls (node) WHERE reply IS NULL;
      -- Token buckets every node takes from (runs and requests per minute, per tenant).
      CREATE TABLE rate_buckets (
        key TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        updated_ms BIGINT NOT NULL
      );
    `,
  },
];

export const PG_LATEST_VERSION = PG_MIGRATIONS[PG_MIGRATIONS.length - 1].version;

/** Brings the database's schema to the latest version; safe when several nodes run it at once. */
export async function migrate(pool: Pool, location: string): Promise<void> {
  let client;
  try {
    client = await pool.connect();
  } catch (error) {
    throw pgStoreError(location, "connect", error);
  }
  let current = 0;
  let applying: PgMigration | undefined;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS hookbox_schema (version INTEGER NOT NULL)");
    const row = (await client.query<{ version: number }>("SELECT version FROM hookbox_schema")).rows[0];
    current = row?.version ?? 0;
    if (!row) await client.query("INSERT INTO hookbox_schema (version) VALUES (0)");
    if (current > PG_LATEST_VERSION) {
      throw new HookboxError(
        "STORE",
        `${location} was written by a newer hookbox (store schema version ${current}; this build knows up to ${PG_LATEST_VERSION}); upgrade hookbox to open it`,
        { location, version: current, latest: PG_LATEST_VERSION },
      );
    }
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= current) continue;
      applying = migration;
      await client.query(migration.sql);
      await client.query("UPDATE hookbox_schema SET version = $1", [migration.version]);
    }
    await client.query("COMMIT");
    client.release();
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    client.release(true);
    if (error instanceof HookboxError) throw error;
    const what = applying
      ? `migrate to schema version ${applying.version} (${applying.description}; does the database or its search_path schema hold tables of another application?)`
      : "read the schema version";
    throw pgStoreError(location, what, error);
  }
}
