/*
 * A real PostgreSQL server for the tests: HOOKBOX_TEST_PG_URL's (a user that may CREATE DATABASE), else a
 * throwaway cluster per test file (initdb in a temporary folder, a Unix socket, no TCP port). The code lives in
 * scripts/postgres-server.mjs, which the cluster bench (scripts/bench/cluster.mjs) uses too.
 */
import { afterAll, beforeAll } from "vitest";
import { startPgServer, type PgServer } from "../../scripts/postgres-server.mjs";

export { postgresBinDir, startPgServer, type PgServer } from "../../scripts/postgres-server.mjs";

/**
 * The test file's PostgreSQL server: started before its tests (beforeAll), stopped after them (afterAll). The
 * object answers for the server once it has started.
 */
export function usePgServer(): PgServer {
  let server: PgServer | undefined;
  beforeAll(async () => {
    server = await startPgServer();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });
  const started = () => {
    if (!server) throw new Error("the file's PostgreSQL server is used before its beforeAll started it");
    return server;
  };
  return {
    get adminUrl() {
      return started().adminUrl;
    },
    createDatabase: (prefix) => started().createDatabase(prefix),
    restart: (options) => started().restart(options),
    stop: () => started().stop(),
  };
}
