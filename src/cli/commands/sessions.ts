import { parseArgs } from "node:util";
import { HookboxError } from "../../errors.js";
import { openStoreAt } from "../../store/index.js";
import type { Store } from "../../store/types.js";
import { loadServerConfig } from "../../server/config.js";
import { LiveConfig } from "../../server/live-config.js";
import { RetentionSweeper } from "../../server/retention.js";
import { SessionManager } from "../../session/manager.js";
import { failUsage } from "../exit.js";
import { printable } from "../terminal-text.js";

const usage = "usage: hookbox sessions --store FILE|URL [--tenant NAME] [--json] | --delete ID... | --prune --config FILE";

/*
 * `hookbox sessions --store FILE`: one line per session (or one JSON object per line with --json).
 * `--delete ID` (repeatable) deletes sessions as DELETE /v1/sessions/:id does; `--prune --config FILE` deletes what
 * the config's retention rules would, as one sweep of the server's (docs/server.md, "Deleting sessions and retention").
 */
export async function sessionsCommand(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        store: { type: "string" },
        tenant: { type: "string" },
        json: { type: "boolean" },
        delete: { type: "string", multiple: true },
        prune: { type: "boolean" },
        config: { type: "string" },
      },
      strict: true,
    }));
    if (!values.store) throw new HookboxError("USAGE", `--store is required (${usage})`);
    if (values.delete && values.prune) throw new HookboxError("USAGE", `--delete and --prune go one at a time (${usage})`);
    if (values.prune && !values.config)
      throw new HookboxError("USAGE", `--prune needs --config FILE: its tenants' retention says what goes`);
    if (values.config && !values.prune) throw new HookboxError("USAGE", `--config is for --prune (${usage})`);
    if (values.tenant && (values.delete || values.prune))
      throw new HookboxError("USAGE", `--tenant narrows the list only; --delete names sessions, --prune follows the config`);
  } catch (error) {
    return failUsage(
      "sessions",
      error instanceof HookboxError ? error : new HookboxError("USAGE", `${(error as Error).message} (${usage})`),
    );
  }
  // The config is read before the store opens, so a broken one changes nothing.
  let config;
  try {
    if (values.config) config = loadServerConfig(values.config);
  } catch (error) {
    return failUsage("sessions", error);
  }
  let store;
  try {
    store = await openStoreAt(values.store);
  } catch (error) {
    return failUsage("sessions", error);
  }
  try {
    if (values.delete) return await deleteSessions(store, values.delete, values.json === true);
    if (config) return await prune(store, new LiveConfig(config), values.json === true);
    return await list(store, values.store, values.tenant, values.json === true);
  } catch (error) {
    return failUsage("sessions", error);
  } finally {
    await store.close();
  }
}

async function list(store: Store, location: string, tenant: string | undefined, json: boolean): Promise<number> {
  const sessions = await store.listSessions(tenant ? { tenant } : {});
  for (const session of sessions) {
    if (json) {
      process.stdout.write(`${JSON.stringify(session)}\n`);
      continue;
    }
    const last = session.lastRun;
    const prompt = last ? printable(JSON.stringify(last.prompt.length > 60 ? `${last.prompt.slice(0, 57)}...` : last.prompt)) : "";
    process.stdout.write(
      `${printable(session.id)}  ${printable(session.tenant)}  ${new Date(session.createdMs).toISOString()}  runs=${session.runs}${last ? `  last=${last.status}  ${prompt}` : ""}\n`,
    );
  }
  if (!json && sessions.length === 0) process.stderr.write(`hookbox sessions: no sessions in ${location}\n`);
  return 0;
}

/**
 * Each session in turn, as DELETE /v1/sessions/:id: the store refuses one with a running run (SESSION_BUSY, also
 * a server's run on the same file) or forks (SESSION_FORKED), and an unknown id (NOT_FOUND). A refusal is one line
 * on stderr naming the session; the others are still deleted; exit 1 when any was refused.
 */
async function deleteSessions(store: Store, ids: string[], json: boolean): Promise<number> {
  let refused = 0;
  for (const id of ids) {
    try {
      const { sessionId, tenant, freedBytes } = await store.deleteSession(id);
      process.stdout.write(
        json
          ? `${JSON.stringify({ deleted: true, sessionId, tenant, freedBytes })}\n`
          : `deleted ${printable(sessionId)} (tenant ${printable(tenant)}, ${freedBytes} bytes freed)\n`,
      );
    } catch (error) {
      if (!(error instanceof HookboxError && ["NOT_FOUND", "SESSION_BUSY", "SESSION_FORKED"].includes(error.code))) throw error;
      refused += 1;
      process.stderr.write(`hookbox sessions: ${error.code}: ${printable(error.message)}\n`);
    }
  }
  return refused > 0 ? 1 : 0;
}

/** One retention sweep with the config's rules (src/server/retention.ts): what a server on this config would delete. */
async function prune(store: Store, live: LiveConfig, json: boolean): Promise<number> {
  let failed = false;
  const manager = new SessionManager({
    store,
    runtimeFor: () => Promise.reject(new HookboxError("USAGE", "hookbox sessions --prune starts no runs")),
  });
  const sweeper = new RetentionSweeper(live, manager, (message) => {
    failed = true;
    process.stderr.write(`hookbox sessions: ${message}\n`);
  });
  const ruled = [...live.tenants.values()].filter((tenant) => tenant.retentionDays !== undefined).map((tenant) => tenant.config.name);
  const { deleted, freedBytes } = await sweeper.sweep();
  process.stdout.write(
    json
      ? `${JSON.stringify({ deleted, freedBytes, tenants: ruled })}\n`
      : `pruned ${deleted} session${deleted === 1 ? "" : "s"} (${freedBytes} bytes freed) by the retention of ${ruled.length ? ruled.map(printable).join(", ") : "no tenant"}\n`,
  );
  return failed ? 2 : 0;
}
