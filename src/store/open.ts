import { SqliteStore } from "./sqlite.js";
import { MemoryStore } from "./memory.js";
import { LATEST_VERSION } from "./migrations.js";
import type { Store } from "./types.js";

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
