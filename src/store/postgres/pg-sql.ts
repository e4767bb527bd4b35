/* SQL shared by the PostgreSQL store's modules. */

/** The database's clock in epoch ms: leases and rate buckets are timed by it, never by a node's own clock. */
export const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
