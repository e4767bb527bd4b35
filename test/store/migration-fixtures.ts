import { copyFileSync, writeFileSync } from "node:fs";
import { afterEach, beforeEach } from "vitest";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { HookboxEvent } from "../../src/events/types.js";
import type { Store } from "../../src/store/index.js";
import { repoRoot, startCli } from "../helpers/cli.js";
import { tempDir } from "./helpers.js";

/* What the migration tests of stores written by older schemas share: the tools and model of the fixtures of 8 and 9, a stepped resume. */

export const lookupTools = `export default [{ name: "lookup", description: "look up an order", parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  handler: (args) => ({ id: args.id, total: 120 }) }];
`;

/** One inference with two lookup calls (15 tokens), then an answer (27 tokens). */
export const twoLookupsModel = {
  steps: [
    {
      text: "Looking it up.",
      toolCalls: [
        { id: "c1", name: "lookup", args: { id: "A17" } },
        { id: "c2", name: "lookup", args: { id: "B2" } },
      ],
      usage: { inputTokens: 10, outputTokens: 5 },
    },
    { text: "Order A17 totals 120.", usage: { inputTokens: 20, outputTokens: 7 } },
  ],
};

/**
 * A fresh copy of a store written by an older schema (`name` under test/fixtures/store) in a new directory, with
 * the files its config names written beside it (policy.ts, tools.mjs, model.json): each test migrates its own copy.
 */
export function copyStoreFixture(name: string, files: Record<string, string>): { dir: string; file: string } {
  const dir = tempDir(`hookbox-${name.replace(/\W/g, "-")}-`);
  const file = join(dir, "store.db");
  copyFileSync(join(repoRoot, "test/fixtures/store", name), file);
  for (const [fileName, text] of Object.entries(files)) writeFileSync(join(dir, fileName), text);
  return { dir, file };
}

/** The policy of the fixtures of schemas 9 and 10: two hooks that pass every call through. */
export const twoHooksPolicy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { beforeToolCall(p) { return undefined; }, afterToolCall(p) { return undefined; } } });
`;

/** A test's copy of a fixture (its directory and store file), and the store the test opened on it, if any. */
export interface FixtureCopy {
  dir: string;
  file: string;
  store: Store | undefined;
}

/**
 * Registers, for the test file calling it, a fresh copy of the fixture `name` before each test (with `policy`, the
 * lookup tools and the two-lookups model beside it) and the closing of the store a test opened on it after each.
 */
export function copyBeforeEachTest(name: string, policy: string): FixtureCopy {
  const copy: FixtureCopy = { dir: "", file: "", store: undefined };
  beforeEach(() => {
    Object.assign(
      copy,
      copyStoreFixture(name, { "policy.ts": policy, "tools.mjs": lookupTools, "model.json": JSON.stringify(twoLookupsModel) }),
    );
  });
  afterEach(async () => {
    await copy.store?.close();
    copy.store = undefined;
  });
  return copy;
}

/** `hookbox run` of the fixture's config files in `dir` on the store `file`, as a new run of `session`, with --json. */
export function runArgs(options: { dir: string; file: string; session: string; prompt: string }): string[] {
  const { dir, file, session, prompt } = options;
  return [
    "run",
    join(dir, "policy.ts"),
    "--model",
    `scripted:${join(dir, "model.json")}`,
    "--host-tools",
    join(dir, "tools.mjs"),
    "--store",
    file,
    "--session",
    session,
    "--prompt",
    prompt,
    "--json",
  ];
}

/** The rows of a query, read from the store file by a read-only connection of its own. */
export function queryFile<Row>(file: string, sql: string, ...params: (string | number)[]): Row[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db.prepare(sql).all(...params) as Row[];
  } finally {
    db.close();
  }
}

/**
 * `hookbox resume` of a step-mode session in the fixture's store, as tenant "default" of a config written into
 * `dir` (policy.ts, tools.mjs, model.json there), each pause answered with a continue line on stdin.
 */
export function resumeStepped(options: { dir: string; file: string; sessionId: string; limits?: Record<string, number> }) {
  const { dir, file, sessionId, limits } = options;
  const tenant = { name: "default", apiKeys: [{ sha256: "0".repeat(64) }], scripts: ["policy.ts"], hostTools: "tools.mjs" };
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({ tenants: [{ ...tenant, model: "scripted:model.json", ...(limits ? { limits } : {}) }] }),
  );
  const cli = startCli(["resume", "--store", file, "--session", sessionId, "--config", join(dir, "config.json"), "--json"]);
  let seen = "";
  cli.child.stdout.on("data", (chunk: Buffer) => {
    seen += chunk;
    for (const line of seen.split("\n").slice(0, -1)) {
      const event = JSON.parse(line) as HookboxEvent;
      if (event.type === "debugger.pause") cli.child.stdin.write(`${JSON.stringify({ continue: event.pauseId })}\n`);
    }
    seen = seen.slice(seen.lastIndexOf("\n") + 1);
  });
  return cli.done;
}

type Rows = Record<string, unknown>[];

/** A run's events, hook chain records and snapshots as rows of the tables (schema 9) or views (10 on) of those names. */
export interface RunRows {
  events: Rows;
  hookCalls: Rows;
  snapshots: Rows;
}

/** What the store file holds of each run, by run id, read through the names `events`, `hook_calls` and `snapshots`. */
export function runRows(file: string): Map<string, RunRows> {
  const query = (sql: string, id: string): Rows => queryFile<Record<string, unknown>>(file, sql, id);
  const runs = queryFile<{ id: string }>(file, "SELECT id FROM runs ORDER BY id");
  return new Map(
    runs.map(({ id }) => [
      id,
      {
        events: query("SELECT seq, type, body FROM events WHERE run_id = ? ORDER BY seq", id),
        hookCalls: query(
          "SELECT idx, call_id, hook, attempt, shadow, verdict, decision, payload FROM hook_calls WHERE run_id = ? ORDER BY idx",
          id,
        ),
        snapshots: query(
          "SELECT idx, phase, blocks, head, block_bytes, last_seq, iterations, created_ms FROM snapshots WHERE run_id = ? ORDER BY idx",
          id,
        ),
      },
    ]),
  );
}
