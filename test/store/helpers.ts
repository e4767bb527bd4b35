import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { HookboxEvent } from "../../src/events/types.js";
import type { Turn } from "../../src/turns/turn.js";
import { openStore, thisProcessInstance, type RunRecord, type SessionRecord, type Store } from "../../src/store/index.js";

export function tempDir(prefix = "hookbox-store-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * A SQLite file store and what another connection sees committed in it: how many sessions. Tells a read that commits
 * the store's queued writes first from one that leaves them to the group commit.
 */
export async function withCommittedView(test: (store: Store, committedSessions: () => number) => Promise<void>): Promise<void> {
  const file = join(tempDir(), "store.db");
  const store = openStore(file);
  const other = new DatabaseSync(file, { readOnly: true });
  try {
    await test(store, () => (other.prepare("SELECT count(*) AS n FROM sessions").get() as { n: number }).n);
  } finally {
    other.close();
    await store.close();
  }
}

/** A pid that belonged to a process which has exited. */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "0"]);
  return child.pid!;
}

export function session(id = "s1", tenant = "acme"): SessionRecord {
  return { id, tenant, tenantConfig: { name: tenant, scripts: [] }, defaults: { maxIterations: 5 }, createdMs: Date.now() };
}

/** A running run; owned by this process (pid and instance) unless another pid is given. */
export function run(id: string, sessionId = "s1", ownerPid = process.pid): RunRecord {
  return {
    id,
    sessionId,
    inferenceId: `inf-${id}`,
    prompt: "hello",
    options: { step: true },
    status: "running",
    iterations: 0,
    startedMs: Date.now(),
    lastSeq: 0,
    ownerPid,
    ...(ownerPid === process.pid ? { ownerInstance: thisProcessInstance() } : {}),
  };
}

export function turn(id: string, texts: string[]): Turn {
  return {
    id,
    blocks: texts.map((text, i) => ({ id: `${id}-b${i}`, kind: "user", payload: { text }, metadata: {} })),
    metadata: {},
    data: {},
  };
}

const base = (seq: number, runId: string) => ({ seq, timestampMs: 1000 + seq, sessionId: "s1", inferenceId: `inf-${runId}` });

export function event(runId: string, seq: number, body: Record<string, unknown> & { type: HookboxEvent["type"] }): HookboxEvent {
  return { ...base(seq, runId), ...body } as HookboxEvent;
}
