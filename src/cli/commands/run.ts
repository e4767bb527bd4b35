import { createInterface } from "node:readline";
import type { HookboxEvent } from "../../events/types.js";
import { parseModelFlag } from "../../engine/model-spec.js";
import { createTenantRuntime } from "../../host/tenant-runtime.js";
import type { TenantConfig, TenantRuntime } from "../../host/types.js";
import type { RunHandle, RunResult } from "../../loop/handle.js";
import { newId } from "../../loop/ids.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { openStore } from "../../store/index.js";
import { SessionManager } from "../../session/manager.js";
import { parseRunFlags, type RunFlags } from "../run-flags.js";
import { describeEvent } from "../transcript.js";
import { exitCodeFor, failUsage } from "../exit.js";

/** `hookbox run <script...> --prompt TEXT [options]`: one tool loop, events on stdout. */
export async function runCommand(argv: string[]): Promise<number> {
  let flags: RunFlags;
  let config: TenantConfig;
  try {
    flags = parseRunFlags(argv);
    config = {
      name: flags.tenant,
      scripts: flags.scripts.map((path) => ({ path })),
      model: parseModelFlag(flags.model, { baseUrl: flags.baseUrl, apiKeyEnv: flags.apiKeyEnv }),
      ...(flags.hostTools ? { hostToolsModule: flags.hostTools } : {}),
      limits: flags.limits,
    };
  } catch (error) {
    return failUsage("run", error);
  }

  const pool = createSandboxPool();
  try {
    let runtime: TenantRuntime;
    try {
      runtime = await createTenantRuntime(config, pool);
    } catch (error) {
      return failUsage("run", error);
    }
    return await execute(flags, config, runtime);
  } finally {
    await pool.close();
  }
}

async function execute(flags: RunFlags, config: TenantConfig, runtime: TenantRuntime): Promise<number> {
  let handle: RunHandle;
  let closeStore = async () => {};
  if (flags.store) {
    let manager: SessionManager;
    try {
      const store = openStore(flags.store);
      manager = new SessionManager({ store, runtimeFor: async () => runtime });
      closeStore = async () => { await manager.close(); await store.close(); };
      const session = (flags.session && (await manager.get(flags.session))) || (await manager.create({ tenant: config.name, tenantConfig: config, sessionId: flags.session }));
      handle = await session.run(flags.prompt, flags.options);
    } catch (error) {
      await closeStore();
      return failUsage("run", error);
    }
  } else {
    handle = runtime.start({ sessionId: newId("sess"), prompt: flags.prompt, options: flags.options });
  }

  const onSigint = () => handle.cancel("cancelled by SIGINT");
  process.on("SIGINT", onSigint);
  const stopStdin = flags.options.step ? listenForContinue(handle, flags.json) : () => {};
  try {
    for await (const event of handle.events()) print(event, flags.json);
    const result: RunResult = await handle.wait();
    if (!flags.json && result.status !== "completed" && result.reason) {
      process.stderr.write(`hookbox run: ${result.status}${result.errorCode ? ` (${result.errorCode})` : ""}: ${result.reason}\n`);
    }
    return exitCodeFor(result.status);
  } finally {
    stopStdin();
    process.off("SIGINT", onSigint);
    await closeStore();
  }
}

function print(event: HookboxEvent, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(event)}\n`);
    return;
  }
  const line = describeEvent(event);
  if (line !== undefined) process.stdout.write(`${line}\n`);
}

/**
 * Step mode: with --json, a line `{"continue":"<pauseId>"}` continues that pause; without it, any line
 * continues the current pause. Bad lines are reported on stderr and ignored (the run is not harmed).
 */
function listenForContinue(handle: RunHandle, json: boolean): () => void {
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    if (!json) {
      const current = (handle as RunHandle & { pauseId?: string }).pauseId;
      if (current) handle.continue(current);
      return;
    }
    if (!line.trim()) return;
    let pauseId: unknown;
    try {
      pauseId = (JSON.parse(line) as { continue?: unknown }).continue;
    } catch {
      /* reported below */
    }
    if (typeof pauseId !== "string") {
      process.stderr.write(`hookbox run: stdin: expected {"continue":"<pauseId>"}, got ${line.slice(0, 80)}\n`);
    } else if (!handle.continue(pauseId)) {
      process.stderr.write(`hookbox run: stdin: ${pauseId} is not this run's open pause\n`);
    }
  });
  return () => lines.close();
}
