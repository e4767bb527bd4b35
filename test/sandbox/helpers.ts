import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { BeforeToolCallPayload, HookPayload, ToolContext, MiddlewareContext } from "../../src/contracts/context.js";
import type { Turn } from "../../src/turns/turn.js";
import { afterEach } from "vitest";
import { createSandboxPool, type SandboxPoolOptions, type SupervisedSandboxPool } from "../../src/sandbox/index.js";

export const scriptDir = mkdtempSync(join(tmpdir(), "hookbox-sandbox-test-"));

/** A script given as source text; `name` becomes the file name (and the default script name). */
export function script(name: string, source: string): { source: string; filename: string } {
  return { source, filename: join(scriptDir, `${name}.ts`) };
}

/** Writes files (path -> text) under a fresh directory; returns the directory. */
export function writeFiles(files: Record<string, string>): string {
  const dir = mkdtempSync(join(scriptDir, "project-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** The ids and times every ctx and payload carries. */
export const common = {
  sessionId: "s1",
  inferenceId: "i1",
  traceId: "t1",
  turnId: "u1",
  timestampMs: 1,
  tags: {},
  budget: { iteration: 1, maxIterations: 20, tokensUsed: 0, costUsd: 0, retriesLeft: 20 },
};

export function beforePayload(name = "lookup", args: Record<string, unknown> = {}): BeforeToolCallPayload {
  return {
    phase: "beforeToolCall",
    call: { id: "call-1", name, args: args as never, origin: "script" },
    attempt: 1,
    ...common,
  };
}

export function afterPayload(result: unknown): HookPayload {
  return { ...beforePayload(), phase: "afterToolCall", result: result as never, durationMs: 1 };
}

export const toolCtx: ToolContext = {
  toolName: "lookup",
  callId: "call-1",
  ...common,
  attempt: 1,
};

export const middlewareCtx: MiddlewareContext = {
  middlewareName: "mw",
  ...common,
};

export function turn(text = "hello"): Turn {
  return { id: "turn-1", blocks: [{ id: "b1", kind: "user", payload: { text }, metadata: {} }], metadata: {}, data: {} };
}

/** Resolves with the rejection (fails the test if the promise resolves). */
export async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  try {
    const value = await promise;
    throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
  } catch (error) {
    const e = error as { code?: string; message: string; details?: Record<string, unknown> };
    if (e.code === undefined) throw error;
    return { code: e.code, message: e.message, details: e.details ?? {} };
  }
}

/** A pool factory for a test file: every pool it made is closed after each test. */
export function poolsClosedAfterEach(): (options: SandboxPoolOptions) => SupervisedSandboxPool {
  const pools: SupervisedSandboxPool[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.close()));
  });
  return (options) => {
    const pool = createSandboxPool(options);
    pools.push(pool);
    return pool;
  };
}
