import { afterAll } from "vitest";
import { join } from "node:path";
import { openMemoryStore, openPostgresStore, openStore, type Store } from "../../src/store/index.js";
import { startPgServer, type PgServer } from "../helpers/postgres.js";
import { tempDir } from "./helpers.js";

/*
 * Every store implementation, for the contract tests that must hold on each: SQLite (a file), memory, and
 * PostgreSQL (a fresh database on the file's throwaway server, test/helpers/postgres.ts).
 */

let server: Promise<PgServer> | undefined;
afterAll(async () => {
  await (await server)?.stop();
});

/** The file's PostgreSQL server, started on first use. */
export function pgServer(): Promise<PgServer> {
  server ??= startPgServer();
  return server;
}

/** A PostgreSQL store on a new, empty database. */
export async function openPgTestStore(options: { leaseMs?: number; node?: string } = {}): Promise<Store> {
  return openPostgresStore(await (await pgServer()).createDatabase(), options);
}

export const allStores: [string, () => Promise<Store>][] = [
  ["sqlite", async () => openStore(join(tempDir(), "store.db"))],
  ["memory", async () => openMemoryStore()],
  ["postgres", () => openPgTestStore()],
];
