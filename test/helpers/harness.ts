import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ScriptedStep } from "../../src/engine/scripted.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { RunResult, RunOptions, StartRunRequest, TenantRuntime } from "../../src/host/types.js";
import type { HostModule } from "../../src/host/host-module.js";
import { createTenantRuntime, type TenantRuntimeExtras } from "../../src/host/tenant-runtime.js";
import type { SandboxPool, ScriptSource } from "../../src/sandbox/api.js";

export const tmp = (prefix = "hookbox-test-") => mkdtempSync(join(tmpdir(), prefix));

export function writeSteps(steps: ScriptedStep[]): string {
  const file = join(tmp(), "model.json");
  writeFileSync(file, JSON.stringify({ steps }));
  return file;
}

/** Writes script sources to a temp dir and returns their paths. */
export function writeScripts(scripts: Record<string, string>): ScriptSource[] {
  const dir = tmp("hookbox-scripts-");
  return Object.entries(scripts).map(([name, source]) => {
    const path = join(dir, name);
    writeFileSync(path, source);
    return { path };
  });
}

export interface Harness {
  runtime: TenantRuntime;
  run(prompt?: string, options?: RunOptions, request?: Partial<StartRunRequest>): Promise<{ result: RunResult; events: HookboxEvent[] }>;
}

export async function harness(setup: {
  steps: ScriptedStep[];
  host?: Partial<HostModule>;
  scripts?: ScriptSource[];
  pool?: SandboxPool;
  tenant?: string;
  extras?: TenantRuntimeExtras;
  defaults?: RunOptions;
}): Promise<Harness> {
  const noPool: SandboxPool = {
    tenant() {
      throw new Error("no sandbox in this test");
    },
    async close() {},
  };
  const runtime = await createTenantRuntime(
    {
      name: setup.tenant ?? "test",
      scripts: setup.scripts ?? [],
      model: { kind: "scripted", file: writeSteps(setup.steps) },
      runDefaults: setup.defaults,
    },
    setup.pool ?? noPool,
    { ...setup.extras, host: setup.host },
  );
  return {
    runtime,
    async run(prompt = "hello", options, request) {
      const handle = runtime.start({ sessionId: "sess_test", prompt, options, ...request });
      const events: HookboxEvent[] = [];
      for await (const event of handle.events()) events.push(event);
      return { result: await handle.wait(), events };
    },
  };
}

export const ofType = <T extends HookboxEvent["type"]>(events: HookboxEvent[], type: T) =>
  events.filter((e): e is Extract<HookboxEvent, { type: T }> => e.type === type);
