import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

/*
 * A real PostgreSQL server for the tests. With HOOKBOX_TEST_PG_URL set (a URL whose user may CREATE DATABASE),
 * the tests use that server; otherwise each test file starts a throwaway cluster of its own: initdb into a
 * temporary folder (as the unprivileged `postgres` user when the tests run as root), no TCP listener, its Unix
 * socket in that folder, stopped and removed when the file is done. Nothing is skipped: a server that cannot be
 * started fails the test with what went wrong.
 */

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
export function postgresBinDir(): string {
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
function asOwner(bin: string, args: string[], options: { timeoutMs?: number } = {}): string {
  const root = process.getuid?.() === 0;
  const [command, argv] = root ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  try {
    return execFileSync(command, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: options.timeoutMs ?? 60_000 });
  } catch (error) {
    const failed = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${bin} ${args.join(" ")} failed: ${failed.stderr || failed.stdout || failed.message}`);
  }
}

async function query(url: string, sql: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The server the tests of one file use (see the comment at the top). */
export async function startPgServer(): Promise<PgServer> {
  const external = process.env.HOOKBOX_TEST_PG_URL;
  if (external) return externalServer(external);
  return throwawayCluster();
}

function externalServer(adminUrl: string): PgServer {
  const created: string[] = [];
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
      throw new Error("HOOKBOX_TEST_PG_URL names a server these tests do not own: the restart test needs a throwaway cluster");
    },
    async stop() {
      for (const name of created.splice(0)) await query(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    },
  };
}

async function throwawayCluster(): Promise<PgServer> {
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
