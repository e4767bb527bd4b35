/*
 * A real PostgreSQL server for the tests: HOOKBOX_TEST_PG_URL's (a user that may CREATE DATABASE), else a
 * throwaway cluster per test file (initdb in a temporary folder, a Unix socket, no TCP port). The code lives in
 * scripts/postgres-server.mjs, which the cluster bench (scripts/bench/cluster.mjs) uses too.
 */
export { postgresBinDir, startPgServer, type PgServer } from "../../scripts/postgres-server.mjs";
