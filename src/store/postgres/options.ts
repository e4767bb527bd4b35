/*
 * What opening a PostgreSQL store takes: its own module, free of the driver's types, so the library's published
 * declarations (src/store/open.ts) name it without pulling in \`pg\`.
 */

export interface PostgresStoreOptions {
  /** This node's name (in `run-resumed {node}` and the runs it owns); default `<hostname>:<pid>`. */
  node?: string;
  /** How long a run's lease lasts unless its owner renews it, ms (default 15000). */
  leaseMs?: number;
  /** Connections in this node's pool (default 10). */
  poolSize?: number;
}

export const DEFAULT_LEASE_MS = 15_000;
