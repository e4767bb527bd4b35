import { parseArgs } from "node:util";
import { HookboxError } from "../../errors.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { openStoreAt, type RunFilter } from "../../store/index.js";
import { loadReplayScripts, replay, type ReplayChange, type ReplaySummary } from "../../policy/replay.js";
import { failUsage } from "../exit.js";
import { parseSince } from "../../contracts/since.js";
import { printable } from "../terminal-text.js";

const usage = "usage: hookbox replay --store FILE|URL --scripts FILE... [--session ID | --tenant NAME] [--since ISO] [--json]";

interface ReplayFlags {
  store: string;
  scripts: string[];
  filter: RunFilter;
  json: boolean;
}

/**
 * `hookbox replay`: re-evaluates scripts' hooks against the runs recorded in a store, calling no model and
 * no tool. Exit 0 when no verdict changed, 1 when one did, 2 on error.
 */
export async function replayCommand(argv: string[]): Promise<number> {
  let flags: ReplayFlags;
  try {
    flags = parseReplayFlags(argv);
  } catch (error) {
    return failUsage("replay", error instanceof HookboxError ? error : new HookboxError("USAGE", `${(error as Error).message} (${usage})`));
  }
  let store;
  try {
    store = await openStoreAt(flags.store);
  } catch (error) {
    return failUsage("replay", error);
  }
  const pool = createSandboxPool();
  try {
    const scripts = await loadReplayScripts(
      pool,
      "replay",
      flags.scripts.map((path) => ({ path })),
    );
    const summary = await replay({ store, filter: flags.filter, scripts, onChange: (change) => printChange(change, flags.json) });
    printSummary(summary, flags.json);
    return Object.keys(summary.changed).length > 0 ? 1 : 0;
  } catch (error) {
    return failUsage("replay", error);
  } finally {
    await pool.close();
    await store.close();
  }
}

function printChange(change: ReplayChange, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(change)}\n`);
    return;
  }
  const decision = change.decision;
  const why = typeof decision.reason === "string" ? decision.reason : typeof decision.message === "string" ? decision.message : "";
  process.stdout.write(
    `session ${printable(change.sessionId)} run ${change.runId} call ${printable(change.callId)} ${change.hook} (attempt ${change.attempt}): ` +
      `recorded ${change.recorded}, now ${change.replayed}${why ? ` (${printable(why)})` : ""}\n`,
  );
}

function printSummary(summary: ReplaySummary, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  const changed = Object.entries(summary.changed);
  const total = changed.reduce((sum, [, n]) => sum + n, 0);
  process.stdout.write(
    `replayed ${summary.calls} calls of ${summary.runs} runs: ${summary.same} same, ${total} changed` +
      `${changed.length ? ` (${changed.map(([change, n]) => `${change}: ${n}`).join(", ")})` : ""}, ${summary.errors} hook errors\n`,
  );
}

function parseReplayFlags(argv: string[]): ReplayFlags {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      store: { type: "string" },
      scripts: { type: "string", multiple: true },
      session: { type: "string" },
      tenant: { type: "string" },
      since: { type: "string" },
      json: { type: "boolean" },
    },
    allowPositionals: true,
    strict: true,
  });
  // `--scripts a.ts b.ts`: the files after the flag arrive as positionals.
  const scripts = [...(values.scripts ?? []), ...positionals];
  if (!values.store) throw new HookboxError("USAGE", `--store is required (${usage})`);
  if (scripts.length === 0) throw new HookboxError("USAGE", `--scripts needs at least one script file (${usage})`);
  if (values.session && values.tenant) throw new HookboxError("USAGE", `give --session or --tenant, not both (${usage})`);
  const filter: RunFilter = {};
  if (values.session) filter.sessionIds = [values.session];
  if (values.tenant) filter.tenant = values.tenant;
  if (values.since !== undefined) {
    const since = parseSince(values.since);
    if ("problem" in since) throw new HookboxError("USAGE", `--since: ${since.problem}`);
    filter.sinceMs = since.ms;
  }
  return { store: values.store, scripts, filter, json: values.json ?? false };
}
