import { SqliteStore } from "./sqlite.js";
import { MemoryStore } from "./memory.js";
import { LATEST_VERSION } from "./migrations.js";
import type { Store } from "./types.js";
import { isPostgresUrl } from "./postgres/pg-driver.js";
import type { PostgresStoreOptions } from "./postgres/options.js";

export type { PostgresStoreOptions };

/*
 * The library's way to a store. Its declarations name only the Store interface, so a host's compiler never
 * reads the SQLite or in-memory implementations (the published types stay free of internals).
 */

/** The store schema version this hookbox writes (the latest migration). */
export const STORE_SCHEMA_VERSION: number = LATEST_VERSION;

/**
 * Opens the SQLite store at `file` (created if missing; `:memory:` for a throwaway one). Runs left
 * `running` by a process that is gone are marked `interrupted`. Throws HookboxError STORE naming the file.
 */
export function openStore(file: string): Store {
  return new SqliteStore(file);
}

/** A store that lives in this process only. */
export function openMemoryStore(): Store {
  return new MemoryStore();
}

/**
 * Opens the PostgreSQL store at `url` (`postgres://USER@HOST/DB`): connects, migrates the schema (safely when
 * several nodes start at once) and joins the nodes that share it. Throws HookboxError STORE (or
 * STORE_UNAVAILABLE when the database cannot be reached) naming the database without its password.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const { PostgresStore } = await import("./postgres/postgres-store.js");
  return PostgresStore.open(url, options);
}

/** The store a `--store` value names: a `postgres://` URL, or a SQLite file path (`:memory:` for a throwaway one). */
export async function openStoreAt(spec: string, options: PostgresStoreOptions = {}): Promise<Store> {
  return isPostgresUrl(spec) ? openPostgresStore(spec, options) : openStore(spec);
}
