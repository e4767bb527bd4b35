import { parseArgs } from "node:util";
import { HookboxError } from "../../errors.js";
import { openStoreAt } from "../../store/index.js";
import { failUsage } from "../exit.js";
import { printable } from "../terminal-text.js";

const usage = "usage: hookbox sessions --store FILE|URL [--tenant NAME] [--json]";

/** `hookbox sessions --store FILE`: one line per session (or one JSON object per line with --json). */
export async function sessionsCommand(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { store: { type: "string" }, tenant: { type: "string" }, json: { type: "boolean" } },
      strict: true,
    }));
    if (!values.store) throw new HookboxError("USAGE", `--store is required (${usage})`);
  } catch (error) {
    return failUsage(
      "sessions",
      error instanceof HookboxError ? error : new HookboxError("USAGE", `${(error as Error).message} (${usage})`),
    );
  }
  let store;
  try {
    store = await openStoreAt(values.store);
  } catch (error) {
    return failUsage("sessions", error);
  }
  try {
    const sessions = await store.listSessions(values.tenant ? { tenant: values.tenant } : {});
    for (const session of sessions) {
      if (values.json) {
        process.stdout.write(`${JSON.stringify(session)}\n`);
        continue;
      }
      const last = session.lastRun;
      const prompt = last ? printable(JSON.stringify(last.prompt.length > 60 ? `${last.prompt.slice(0, 57)}...` : last.prompt)) : "";
      process.stdout.write(
        `${printable(session.id)}  ${printable(session.tenant)}  ${new Date(session.createdMs).toISOString()}  runs=${session.runs}${last ? `  last=${last.status}  ${prompt}` : ""}\n`,
      );
    }
    if (!values.json && sessions.length === 0) process.stderr.write(`hookbox sessions: no sessions in ${values.store}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
