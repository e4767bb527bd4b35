/*
 * Schema migrations, versioned in code. `PRAGMA user_version` holds the applied version; each migration
 * runs in one transaction with the version bump, so a crash mid-migration leaves the previous version.
 * Append new migrations; never edit a released one.
 */

export interface Migration {
  version: number;
  description: string;
  sql: string;
}

/** Marks the file as a hookbox store ("Hkbx"), so a foreign SQLite file is refused, not altered. */
export const APPLICATION_ID = 0x486b6278;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    description: "sessions, runs, snapshots, events, pauses, tool-result journal",
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        tenant_config TEXT NOT NULL,
        defaults TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        forked_from TEXT,
        initial_turn TEXT
      );
      CREATE INDEX sessions_by_tenant ON sessions (tenant, created_ms);
      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        inference_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        options TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        error_code TEXT,
        iterations INTEGER NOT NULL DEFAULT 0,
        started_ms INTEGER NOT NULL,
        finished_ms INTEGER,
        last_seq INTEGER NOT NULL DEFAULT 0,
        owner_pid INTEGER
      );
      CREATE INDEX runs_by_session ON runs (session_id, started_ms);
      CREATE INDEX runs_by_status ON runs (status);
      CREATE TABLE snapshots (
        run_id TEXT NOT NULL REFERENCES runs (id),
        idx INTEGER NOT NULL,
        phase TEXT NOT NULL,
        turn TEXT NOT NULL,
        last_seq INTEGER NOT NULL,
        iterations INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (run_id, idx)
      ) WITHOUT ROWID;
      CREATE TABLE events (
        run_id TEXT NOT NULL REFERENCES runs (id),
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE pauses (
        pause_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (id),
        phase TEXT NOT NULL,
        deadline_ms INTEGER NOT NULL,
        pending TEXT NOT NULL,
        opened_ms INTEGER NOT NULL,
        closed_reason TEXT
      );
      CREATE INDEX pauses_by_run ON pauses (run_id);
      CREATE TABLE tool_results (
        run_id TEXT NOT NULL REFERENCES runs (id),
        call_id TEXT NOT NULL,
        block TEXT NOT NULL,
        PRIMARY KEY (run_id, call_id)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    description: "bytes stored per tenant (the store quota), counted from what version 1 already holds",
    sql: `
      CREATE TABLE tenant_usage (
        tenant TEXT PRIMARY KEY,
        bytes INTEGER NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO tenant_usage (tenant, bytes)
      SELECT tenant, sum(n) FROM (
        SELECT tenant, length(tenant_config) + length(defaults) + coalesce(length(initial_turn), 0) AS n FROM sessions
        UNION ALL SELECT s.tenant, length(r.prompt) + length(r.options) FROM runs r JOIN sessions s ON s.id = r.session_id
        UNION ALL SELECT s.tenant, length(e.body) FROM events e JOIN runs r ON r.id = e.run_id JOIN sessions s ON s.id = r.session_id
        UNION ALL SELECT s.tenant, length(x.turn) FROM snapshots x JOIN runs r ON r.id = x.run_id JOIN sessions s ON s.id = r.session_id
        UNION ALL SELECT s.tenant, length(t.block) FROM tool_results t JOIN runs r ON r.id = t.run_id JOIN sessions s ON s.id = r.session_id
      ) GROUP BY tenant;
    `,
  },
  {
    version: 3,
    description: "policy lifecycle: script versions, deployments, the deployment of each run, hook chain records",
    sql: `
      ALTER TABLE runs ADD COLUMN deployment TEXT;
      ALTER TABLE runs ADD COLUMN deployment_id TEXT;
      CREATE INDEX runs_by_deployment ON runs (deployment_id);
      CREATE TABLE script_versions (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        entry TEXT NOT NULL,
        files TEXT NOT NULL,
        bundle_hash TEXT NOT NULL,
        warnings TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, name, version)
      ) WITHOUT ROWID;
      CREATE TABLE deployments (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        number INTEGER NOT NULL,
        scripts TEXT NOT NULL,
        shadow TEXT NOT NULL,
        from_config INTEGER NOT NULL,
        previous_id TEXT,
        rollback_of TEXT,
        created_ms INTEGER NOT NULL,
        UNIQUE (tenant, number)
      );
      CREATE TABLE hook_calls (
        run_id TEXT NOT NULL REFERENCES runs (id),
        idx INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        hook TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        shadow INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        decision TEXT NOT NULL,
        payload TEXT,
        PRIMARY KEY (run_id, idx)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    description: "usage ledger: one row per usage-bearing event, summed by tenant and time",
    sql: `
      CREATE TABLE usage_ledger (
        tenant TEXT NOT NULL,
        run_id TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        runs INTEGER NOT NULL,
        inferences INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        tool_calls INTEGER NOT NULL,
        sandbox_cpu_ms REAL NOT NULL
      );
      CREATE INDEX usage_by_tenant ON usage_ledger (tenant, at_ms);
      CREATE INDEX usage_by_run ON usage_ledger (run_id);
    `,
  },
  {
    version: 5,
    description: "ctx.kv: per-tenant JSON entries and each tenant's byte count",
    sql: `
      CREATE TABLE kv (
        tenant TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        expires_ms INTEGER,
        PRIMARY KEY (tenant, key)
      );
      CREATE INDEX kv_expiry ON kv (tenant, expires_ms) WHERE expires_ms IS NOT NULL;
      CREATE TABLE kv_usage (
        tenant TEXT PRIMARY KEY,
        bytes INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    description: "the owner process instance of a running run (boot id and start time), so ownership survives PID reuse",
    sql: `ALTER TABLE runs ADD COLUMN owner_instance TEXT;`,
  },
  {
    version: 7,
    description: "sessions as append-only logs of blocks, snapshots as layouts in them; all-time usage as running totals",
    // Whole-turn snapshots stay readable where they are (legacy_snapshots); a session continued from one
    // copies that turn into its log once, at its next snapshot. Nothing is rewritten here.
    sql: `
      ALTER TABLE snapshots RENAME TO legacy_snapshots;
      CREATE TABLE session_log (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        pos INTEGER NOT NULL,
        block TEXT NOT NULL,
        PRIMARY KEY (session_id, pos)
      ) WITHOUT ROWID;
      ALTER TABLE sessions ADD COLUMN log_length INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE sessions ADD COLUMN base TEXT;
      CREATE TABLE snapshots (
        run_id TEXT NOT NULL REFERENCES runs (id),
        idx INTEGER NOT NULL,
        phase TEXT NOT NULL,
        blocks TEXT NOT NULL,
        head TEXT,
        block_bytes INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        iterations INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (run_id, idx)
      ) WITHOUT ROWID;
      CREATE TABLE usage_totals (
        tenant TEXT PRIMARY KEY,
        runs INTEGER NOT NULL,
        inferences INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        tool_calls INTEGER NOT NULL,
        sandbox_cpu_ms REAL NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO usage_totals
      SELECT tenant, sum(runs), sum(inferences), sum(input_tokens), sum(output_tokens), sum(cost_usd), sum(tool_calls), sum(sandbox_cpu_ms)
      FROM usage_ledger GROUP BY tenant;
    `,
  },
  {
    version: 8,
    description:
      "each run's ownership epoch (its lease's fencing token): a resume takes the next one, and a write of an older one is refused",
    sql: `ALTER TABLE runs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 9,
    description:
      "fewer pages a write: all-time usage in the tenant's stored-bytes row, a run's tokens and cost on its row, the ledger one b-tree by tenant and time",
    // Each transaction rewrites every page it changes: the tenant's bytes and usage totals now share a row, a
    // run's usage rides on the runs row its seq update writes anyway, and the ledger is keyed by what
    // `since` reads (no rowid table beside an index). Rows of the old ledger keep their order: their seq is
    // minus their old row number (the event they came from was not recorded).
    sql: `
      ALTER TABLE tenant_usage ADD COLUMN runs INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tenant_usage ADD COLUMN inferences INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tenant_usage ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tenant_usage ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tenant_usage ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
      ALTER TABLE tenant_usage ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tenant_usage ADD COLUMN sandbox_cpu_ms REAL NOT NULL DEFAULT 0;
      INSERT INTO tenant_usage (tenant, bytes, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms)
      SELECT tenant, 0, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms FROM usage_totals WHERE true
      ON CONFLICT (tenant) DO UPDATE SET runs = excluded.runs, inferences = excluded.inferences, input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, tool_calls = excluded.tool_calls, sandbox_cpu_ms = excluded.sandbox_cpu_ms;
      DROP TABLE usage_totals;
      ALTER TABLE runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
      UPDATE runs SET input_tokens = spent.input_tokens, output_tokens = spent.output_tokens, cost_usd = spent.cost_usd
      FROM (SELECT run_id, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd
            FROM usage_ledger GROUP BY run_id) AS spent
      WHERE spent.run_id = runs.id;
      ALTER TABLE usage_ledger RENAME TO usage_ledger_8;
      CREATE TABLE usage_ledger (
        tenant TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        runs INTEGER NOT NULL,
        inferences INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        tool_calls INTEGER NOT NULL,
        sandbox_cpu_ms REAL NOT NULL,
        PRIMARY KEY (tenant, at_ms, run_id, seq)
      ) WITHOUT ROWID;
      INSERT INTO usage_ledger SELECT tenant, at_ms, run_id, -rowid, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms FROM usage_ledger_8;
      DROP TABLE usage_ledger_8;
    `,
  },
  {
    version: 10,
    description:
      "fewer pages a write: a run's events, hook chain records and snapshots in one table in the order they were written, found by one index",
    // Keyed by run, each table's rows of the runs in flight sat on pages of their own in each table, and a page split
    // there rewrote its neighbours (other runs' rows) too: a commit changed three or more pages per run and table.
    // One rowid table appends every run's rows at its end, whatever the run; its index by (run, seq, idx, kind)
    // holds small entries only. The old tables' names stay as views, so reads (and tools) see the same rows.
    // Hook chain records copied here are put at seq 0 (the seq they followed was not recorded): before the run's events.
    sql: `
      CREATE TABLE run_records (
        run_id TEXT NOT NULL REFERENCES runs (id),
        seq INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        type TEXT,
        body TEXT,
        call_id TEXT,
        hook TEXT,
        attempt INTEGER,
        shadow INTEGER,
        verdict TEXT,
        decision TEXT,
        payload TEXT,
        phase TEXT,
        blocks TEXT,
        head TEXT,
        block_bytes INTEGER,
        iterations INTEGER,
        created_ms INTEGER
      );
      INSERT INTO run_records (run_id, seq, kind, idx, type, body)
      SELECT run_id, seq, 0, 0, type, body FROM events ORDER BY run_id, seq;
      INSERT INTO run_records (run_id, seq, kind, idx, call_id, hook, attempt, shadow, verdict, decision, payload)
      SELECT run_id, 0, 1, idx, call_id, hook, attempt, shadow, verdict, decision, payload FROM hook_calls ORDER BY run_id, idx;
      INSERT INTO run_records (run_id, seq, kind, idx, phase, blocks, head, block_bytes, iterations, created_ms)
      SELECT run_id, last_seq, 2, idx, phase, blocks, head, block_bytes, iterations, created_ms FROM snapshots ORDER BY run_id, idx;
      CREATE UNIQUE INDEX run_records_by_run ON run_records (run_id, seq, idx, kind);
      DROP TABLE events;
      DROP TABLE hook_calls;
      DROP TABLE snapshots;
      CREATE VIEW events AS SELECT run_id, seq, type, body FROM run_records WHERE kind = 0;
      CREATE VIEW hook_calls AS
        SELECT run_id, idx, call_id, hook, attempt, shadow, verdict, decision, payload FROM run_records WHERE kind = 1;
      CREATE VIEW snapshots AS
        SELECT run_id, idx, phase, blocks, head, block_bytes, seq AS last_seq, iterations, created_ms FROM run_records WHERE kind = 2;
    `,
  },
  {
    version: 11,
    description: "fewer pages a write: a run's records keyed by a number of the run (runs.num), not its 36-character id",
    // Each run_records row and each entry of its index carried the run's id: the index entries of the runs in flight
    // filled about ten pages, a commit rewriting several of them. A run's number (its row's rowid when this runs, then
    // one more than the largest) makes an entry a few bytes. The views keep their columns, the run's id read from runs.
    sql: `
      ALTER TABLE runs ADD COLUMN num INTEGER;
      UPDATE runs SET num = rowid;
      CREATE UNIQUE INDEX runs_by_num ON runs (num);
      DROP VIEW events;
      DROP VIEW hook_calls;
      DROP VIEW snapshots;
      CREATE TABLE run_records_11 (
        run_num INTEGER NOT NULL REFERENCES runs (num),
        seq INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        type TEXT,
        body TEXT,
        call_id TEXT,
        hook TEXT,
        attempt INTEGER,
        shadow INTEGER,
        verdict TEXT,
        decision TEXT,
        payload TEXT,
        phase TEXT,
        blocks TEXT,
        head TEXT,
        block_bytes INTEGER,
        iterations INTEGER,
        created_ms INTEGER
      );
      INSERT INTO run_records_11 (run_num, seq, kind, idx, type, body, call_id, hook, attempt, shadow, verdict, decision, payload,
          phase, blocks, head, block_bytes, iterations, created_ms)
        SELECT r.num, x.seq, x.kind, x.idx, x.type, x.body, x.call_id, x.hook, x.attempt, x.shadow, x.verdict, x.decision, x.payload,
          x.phase, x.blocks, x.head, x.block_bytes, x.iterations, x.created_ms
        FROM run_records x JOIN runs r ON r.id = x.run_id ORDER BY x.rowid;
      DROP TABLE run_records;
      ALTER TABLE run_records_11 RENAME TO run_records;
      CREATE UNIQUE INDEX run_records_by_run ON run_records (run_num, seq, idx, kind);
      CREATE VIEW events AS SELECT r.id AS run_id, x.seq, x.type, x.body FROM run_records x JOIN runs r ON r.num = x.run_num WHERE x.kind = 0;
      CREATE VIEW hook_calls AS
        SELECT r.id AS run_id, x.idx, x.call_id, x.hook, x.attempt, x.shadow, x.verdict, x.decision, x.payload
        FROM run_records x JOIN runs r ON r.num = x.run_num WHERE x.kind = 1;
      CREATE VIEW snapshots AS
        SELECT r.id AS run_id, x.idx, x.phase, x.blocks, x.head, x.block_bytes, x.seq AS last_seq, x.iterations, x.created_ms
        FROM run_records x JOIN runs r ON r.num = x.run_num WHERE x.kind = 2;
    `,
  },
];

export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;
