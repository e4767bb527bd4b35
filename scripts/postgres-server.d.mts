// The types of scripts/postgres-server.mjs, for the tests that import it through test/helpers/postgres.ts.
export interface PgServer {
  /** A URL of the server's maintenance database (`postgres`). */
  adminUrl: string;
  /** A new, empty database on the server, and its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server as a crash would (immediate mode) and starts it again on the same data (throwaway clusters only). */
  restart(options?: { downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

/** Where Debian (and most packagers) put the server binaries; the newest major first. */
export function postgresBinDir(): string;

/** The server one test file (or one bench) uses: HOOKBOX_TEST_PG_URL's, else a throwaway cluster. */
export function startPgServer(): Promise<PgServer>;
