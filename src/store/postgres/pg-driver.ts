import type { Pool, PoolClient, PoolConfig } from "pg";
import { HookboxError } from "../../errors.js";

/*
 * The one module that loads the `pg` driver (on first use: a process on a SQLite store never loads it), makes
 * its pool, and turns its errors into the store's: the database unreachable (STORE_UNAVAILABLE), its disk full
 * (STORE_FULL), anything else a STORE error naming the database (never its password).
 */

export type { Pool, PoolClient };

/** A connection or a pool: what runs one statement. */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>;
}

/** True for a `postgres://` or `postgresql://` URL: the store it names is PostgreSQL, not a SQLite file. */
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

/** The URL without its password (what error messages, `store.location` and logs show). */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
  }
}

export async function createPool(url: string, options: { max: number; application: string }): Promise<Pool> {
  const { default: pg } = await import("pg");
  // BIGINT (20) and NUMERIC (1700, what sum() of integers gives) as numbers: ms times, counts and byte totals
  // stay far below 2^53.
  const types = {
    getTypeParser: (oid: number, format?: string) =>
      oid === 20 || oid === 1700 ? (text: string) => Number(text) : pg.types.getTypeParser(oid, format as "text"),
  };
  const config: PoolConfig = {
    connectionString: url,
    max: options.max,
    application_name: options.application,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    types: types as PoolConfig["types"],
  };
  const pool = new pg.Pool(config);
  // An idle connection the server dropped (a restart): the pool discards it; the next query connects anew.
  pool.on("error", () => undefined);
  // A connection checked out of the pool (a transaction in progress) that the server drops emits "error" on its
  // client, which the pool listens to only while the client is idle: unheard, it would end the process. Its
  // queries fail with that error anyway, and the code that holds it gives it back as broken.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** SQLSTATE classes and codes that mean the database could not be reached or went away mid-statement. */
function isUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string") {
    if (/^(08|57P0)/.test(code) || code === "53300") return true; // connection exceptions, admin shutdown, too many connections
    if (["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "ETIMEDOUT", "EPIPE", "ENOENT", "EAI_AGAIN"].includes(code)) return true;
  }
  return (
    typeof message === "string" &&
    /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|Connection ended/i.test(message)
  );
}

/** A store error for `what` failing on the database at `location` (already without its password). */
export function pgStoreError(location: string, what: string, cause: unknown): HookboxError {
  if (cause instanceof HookboxError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (code === "53100") return new HookboxError("STORE_FULL", `the store is full: could not ${what} (${detail})`, { location });
  if (isUnavailable(cause))
    return new HookboxError("STORE_UNAVAILABLE", `the database ${location} cannot be reached: could not ${what} (${detail})`, { location });
  return new HookboxError("STORE", `store ${location}: could not ${what}: ${detail}`, { location });
}

/** True for a transaction the database rolled back to break a deadlock (40P01): done again, it goes through. */
export function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === "40P01";
}

/**
 * Runs `transaction` again when the database chose it as a deadlock's victim (rolled back whole, so nothing of it
 * was committed): a node's batched run writes and its lease renewal lock run rows in different orders, and
 * PostgreSQL breaks such a cycle by failing one side, which is then simply retried.
 */
export async function retryDeadlocks<T>(transaction: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (!isDeadlock(error) || attempt >= attempts) throw error;
    }
  }
}

/** True when a statement failed on the unique index named `index` (23505). */
export function violates(error: unknown, index: string): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === "23505" && constraint === index;
}
