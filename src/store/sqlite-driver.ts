import { createRequire } from "node:module";
import type { DatabaseSync as Database, SQLInputValue } from "node:sqlite";

// Required when this module runs rather than linked with the import graph: on a Node without node:sqlite,
// loading the library must reach its version check (bin/node-support.js, evaluated first) instead of failing to link.
const { DatabaseSync } = createRequire(import.meta.url)("node:sqlite") as typeof import("node:sqlite");

/*
 * The one module that knows which SQLite binding the store runs on: Node's built-in `node:sqlite`
 * (no native package to compile or download on install). Everything else sees these types and helpers.
 */

export type SqliteDatabase = Database;
export type SqlValue = SQLInputValue;

/** A prepared statement; rows come back untyped and each caller names the row shape it selected. */
export interface SqliteStatement {
  run(...params: SqlValue[]): { changes: number | bigint };
  get(...params: SqlValue[]): unknown;
  all(...params: SqlValue[]): unknown[];
  /** Rows one at a time: a reader that stops early never reads the rest. */
  iterate(...params: SqlValue[]): Iterable<unknown>;
}

export function prepare(db: SqliteDatabase, sql: string): SqliteStatement {
  return db.prepare(sql);
}

/** Opens `file` (created unless read-only); foreign keys on, as every hookbox connection wants them. */
export function openSqlite(file: string, options: { readOnly?: boolean } = {}): SqliteDatabase {
  return new DatabaseSync(file, { readOnly: options.readOnly ?? false, enableForeignKeyConstraints: true });
}

/** A pragma's single value (`user_version`, `application_id`, ...). */
export function pragmaValue(db: SqliteDatabase, name: string): number {
  const row = db.prepare(`PRAGMA ${name}`).get() as Record<string, number> | undefined;
  return row ? Number(Object.values(row)[0]) : 0;
}

/**
 * Runs `action` in one transaction: committed when it returns, rolled back when it throws. `BEGIN IMMEDIATE`
 * takes the write lock up front, so a writer never fails half way when another process wrote meanwhile (it
 * waits `busy_timeout` for the lock instead). Called inside a transaction, it is a savepoint of that one.
 */
export function inTransaction<T>(db: SqliteDatabase, action: () => T): T {
  const nested = db.isTransaction;
  db.exec(nested ? "SAVEPOINT hookbox_nested" : "BEGIN IMMEDIATE");
  try {
    const result = action();
    db.exec(nested ? "RELEASE hookbox_nested" : "COMMIT");
    return result;
  } catch (error) {
    // A failed COMMIT leaves the transaction open: it is rolled back like a failed action.
    if (db.isTransaction) db.exec(nested ? "ROLLBACK TO hookbox_nested; RELEASE hookbox_nested" : "ROLLBACK");
    throw error;
  }
}
