// A real PostgreSQL server for the tests (test/helpers/postgres.ts) and the cluster bench (scripts/bench/cluster.mjs).
// With HOOKBOX_TEST_PG_URL set (a URL whose user may CREATE DATABASE) they use that server; otherwise each caller
// starts a throwaway cluster of its own: initdb into a temporary folder (as the unprivileged `postgres` user when
// running as root), no TCP listener, its Unix socket in that folder, stopped and removed when the caller is done.
// Nothing is skipped: a server that cannot be started fails with what went wrong.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

/** Where Debian (and most packagers) put the server binaries; the newest major first. */
export function postgresBinDir() {
  const fromEnv = process.env.HOOKBOX_PG_BIN;
  if (fromEnv) return fromEnv;
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length > 0) return join(root, majors[0], "bin");
  const onPath = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath.replace(/\/initdb$/, "");
  throw new Error(
    "PostgreSQL's server binaries (initdb, pg_ctl) were not found: install Debian's postgresql package (apt-get install postgresql; .ci/run does) or set HOOKBOX_TEST_PG_URL to a server the tests may create databases on",
  );
}

/** Runs a server binary as the cluster's owner: `postgres` when we are root (initdb refuses root), else ourselves. */
function asOwner(bin, args, { timeoutMs = 60_000 } = {}) {
  const root = process.getuid?.() === 0;
  const [command, argv] = root ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  try {
    return execFileSync(command, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs });
  } catch (error) {
    throw new Error(`${bin} ${args.join(" ")} failed: ${error.stderr || error.stdout || error.message}`);
  }
}

async function query(url, sql) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The server one test file (or one bench) uses: HOOKBOX_TEST_PG_URL's, else a throwaway cluster. */
export async function startPgServer() {
  const external = process.env.HOOKBOX_TEST_PG_URL;
  if (external) return externalServer(external);
  return throwawayCluster();
}

function externalServer(adminUrl) {
  const created = [];
  return {
    adminUrl,
    async createDatabase(prefix = "hookbox_test") {
      const name = `${prefix}_${randomBytes(6).toString("hex")}`;
      await query(adminUrl, `CREATE DATABASE ${name}`);
      created.push(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.toString();
    },
    async restart() {
      throw new Error("HOOKBOX_TEST_PG_URL names a server these tests do not own: a restart needs a throwaway cluster");
    },
    async stop() {
      for (const name of created.splice(0)) await query(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    },
  };
}

async function throwawayCluster() {
  const bin = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), "hookbox-pg-"));
  // The cluster's owner must be able to enter the folder and write its data and socket there.
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  const socketDir = dir;
  const port = 5432;
  const pgctl = join(bin, "pg_ctl");
  const options = `-c listen_addresses='' -c unix_socket_directories='${socketDir}' -p ${port} -c fsync=off -c max_connections=200 -c shared_buffers=32MB`;
  asOwner(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions", "--locale=C"]);
  const start = () => asOwner(pgctl, ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "-t", "60", "start"]);
  start();
  const adminUrl = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(socketDir)}&port=${port}`;
  let stopped = false;
  return {
    adminUrl,
    async createDatabase(prefix = "hookbox_test") {
      const name = `${prefix}_${randomBytes(6).toString("hex")}`;
      await query(adminUrl, `CREATE DATABASE ${name}`);
      return adminUrl.replace("/postgres?", `/${name}?`);
    },
    async restart({ downMs = 0 } = {}) {
      asOwner(pgctl, ["-D", data, "-m", "immediate", "-w", "stop"]);
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      start();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        asOwner(pgctl, ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
