import { afterAll, beforeAll, expect } from "vitest";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import { startLoopback, type Loopback } from "./loopback.js";
import { createTenantRuntime, type TenantRuntimeExtras } from "../../src/host/tenant-runtime.js";
import type { TenantConfig, TenantRuntime } from "../../src/host/types.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { KvStore } from "../../src/store/kv.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { writeScripts, writeSteps } from "../helpers/harness.js";

/*
 * In-process runs of one sandboxed hook script (real sandbox workers): the scripted model makes one call of a
 * no-op host tool with `args`, the script's beforeToolCall does its work and logs one JSON line, which `run`
 * returns parsed.
 */

export async function hookRuntime(options: {
  pool: SandboxPool;
  tenant: string;
  script: string;
  args: Record<string, string>;
  limits?: TenantConfig["limits"];
  budgets?: TenantConfig["budgets"];
  capabilities: TenantConfig["capabilities"];
  kv?: KvStore;
  /** More of the runtime's extras (a resolver of the test's own, a guard model instance). */
  extras?: Omit<TenantRuntimeExtras, "kv" | "host">;
}): Promise<TenantRuntime> {
  return createTenantRuntime(
    {
      name: options.tenant,
      scripts: writeScripts({ "hook.ts": options.script }),
      model: {
        kind: "scripted",
        file: writeSteps([{ toolCalls: [{ id: "c1", name: "noop", args: options.args }] }, { text: "done" }]),
      },
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.budgets ? { budgets: options.budgets } : {}),
      capabilities: options.capabilities,
    },
    options.pool,
    {
      ...options.extras,
      ...(options.kv ? { kv: options.kv } : {}),
      host: { tools: [{ name: "noop", description: "n", parameters: { type: "object" }, handler: () => ({}) }] },
    },
  );
}

/** Runs to completion; returns the script's logged JSON line. */
export async function runLogged(runtime: TenantRuntime, sessionId: string): Promise<any> {
  const handle = runtime.start({ sessionId, prompt: "go" });
  const events: HookboxEvent[] = [];
  for await (const event of handle.events()) events.push(event);
  expect((await handle.wait()).status).toBe("completed");
  const log = events.find((e) => e.type === "log") as { message: string } | undefined;
  expect(log, JSON.stringify(events)).toBeDefined();
  return JSON.parse(log!.message);
}

/** Runs to completion; returns every log line of the run, each parsed as JSON (one per line the script logged). */
export async function runLoggedLines(runtime: TenantRuntime, sessionId: string): Promise<unknown[]> {
  const handle = runtime.start({ sessionId, prompt: "go" });
  const events: HookboxEvent[] = [];
  for await (const event of handle.events()) events.push(event);
  expect((await handle.wait()).status).toBe("completed");
  return events.flatMap((event) => (event.type === "log" ? [JSON.parse(event.message) as unknown] : []));
}

/** A loopback server process and a one-worker sandbox pool for a test file, started before its tests and closed after. */
export function loopbackAndPool(): { loopback: Loopback; pool: SupervisedSandboxPool } {
  const shared = {} as { loopback: Loopback; pool: SupervisedSandboxPool };
  beforeAll(async () => {
    shared.loopback = await startLoopback();
    shared.pool = createSandboxPool({ workers: 1 });
  });
  afterAll(async () => {
    await shared.pool?.close();
    await shared.loopback?.close();
  });
  return shared;
}
