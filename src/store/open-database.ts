import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { HookboxError } from "../errors.js";
import { APPLICATION_ID, LATEST_VERSION, MIGRATIONS } from "./migrations.js";
import { inTransaction, openSqlite, pragmaValue, prepare, type SqliteDatabase } from "./sqlite-driver.js";

type Db = SqliteDatabase;

/**
 * Opens (creating if needed) a hookbox SQLite file: WAL, foreign keys, migrations to the latest version.
 * Every failure is a STORE error that names the file and says what is wrong with it.
 */
export function openDatabase(file: string): Db {
  let db: Db;
  if (file !== ":memory:" && !existsSync(dirname(file)))
    throw storeError(file, "cannot be opened", new Error("its directory does not exist"));
  try {
    db = openSqlite(file);
  } catch (error) {
    throw storeError(file, "cannot be opened", error);
  }
  try {
    checkIdentity(db, file);
    // NORMAL in WAL: a killed process loses nothing committed; only a power cut can lose the last commits.
    // A checkpoint (copying the WAL into the file, with an fsync) every 10,000 pages rather than 1,000: pages
    // that commits rewrite (a run's event page, the quota row) are copied once per checkpoint, and the event
    // loop stops for it a tenth as often; the WAL file grows to about 40 MB.
    db.exec(
      "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 10000; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000",
    );
    migrate(db, file);
    return db;
  } catch (error) {
    db.close();
    if (error instanceof HookboxError) throw error;
    throw storeError(file, "cannot be used", error);
  }
}

function checkIdentity(db: Db, file: string): void {
  let applicationId: number;
  let version: number;
  let tables: number;
  try {
    applicationId = pragmaValue(db, "application_id");
    version = pragmaValue(db, "user_version");
    tables = (prepare(db, "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n;
  } catch (error) {
    throw storeError(file, "is not a hookbox store (not a SQLite database, or corrupt)", error);
  }
  if (applicationId !== 0 && applicationId !== APPLICATION_ID) {
    throw new HookboxError(
      "STORE",
      `${file} is a SQLite database of another application (application_id ${applicationId}), not a hookbox store`,
      { file },
    );
  }
  if (applicationId === 0 && tables > 0) {
    throw new HookboxError("STORE", `${file} is a SQLite database with tables of its own, not a hookbox store`, { file });
  }
  if (version > LATEST_VERSION) {
    throw new HookboxError(
      "STORE",
      `${file} was written by a newer hookbox (store schema version ${version}; this build knows up to ${LATEST_VERSION}); upgrade hookbox to open it`,
      { file, version, latest: LATEST_VERSION },
    );
  }
}

function migrate(db: Db, file: string): void {
  const current = pragmaValue(db, "user_version");
  for (const migration of MIGRATIONS) {
    if (migration.version <= current) continue;
    try {
      inTransaction(db, () => {
        db.exec(migration.sql);
        db.exec(`PRAGMA application_id = ${APPLICATION_ID}; PRAGMA user_version = ${migration.version}`);
      });
    } catch (error) {
      throw storeError(file, `failed to migrate to schema version ${migration.version} (${migration.description})`, error);
    }
  }
}

export function storeError(file: string, what: string, cause: unknown): HookboxError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  // SQLite rolls the write back whole: the store stays as last committed, and reads go on.
  if (isStoreFull(cause))
    return new HookboxError("STORE_FULL", `the store is full: could not ${what.replace(/^could not /, "")} (${detail})`, { file });
  const hint = /readonly|read-only|permission|EACCES|unable to open/i.test(detail)
    ? existsSync(file)
      ? " (is the file or its directory read-only?)"
      : " (does the directory exist and is it writable?)"
    : "";
  return new HookboxError("STORE", `store ${file} ${what}: ${detail}${hint}`, { file });
}

/** SQLITE_FULL (its code, or errcode 13 as node:sqlite reports it) or a filesystem out of space. */
function isStoreFull(cause: unknown): boolean {
  const { code, errcode, message } = (cause ?? {}) as { code?: unknown; errcode?: unknown; message?: unknown };
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "EDQUOT" || errcode === 13) return true;
  return typeof message === "string" && /database or disk is full|no space left on device|disk quota exceeded/i.test(message);
}
