import { afterAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { RunHandle, TenantConfig } from "../../src/host/types.js";
import { Deployments } from "../../src/policy/deployments.js";
import { openStore } from "../../src/store/index.js";
import { tmp, writeSteps } from "../helpers/harness.js";
import { waitUntil } from "../server/processes.js";

// The runtime of a deployment that is no longer current is dropped once nothing of it runs here, so a
// long-running server's memory follows the deployments in use. A real pool and a real SQLite store.
const pool = createSandboxPool({ workers: 1 });
const store = openStore(join(tmp("hookbox-retire-"), "store.db"));
afterAll(async () => {
  await pool.close();
  await store.close();
});

const RETIRE_AFTER_MS = 100;
const config: TenantConfig = {
  name: "acme",
  scripts: [],
  model: {
    kind: "scripted",
    file: writeSteps([{ toolCalls: [{ id: "c1", name: "noop", args: {} }] }, { text: "done" }]),
  },
};

function version(label: string) {
  return store.createScriptVersion({
    tenant: "acme",
    name: "policy",
    entry: "policy.ts",
    files: {
      "policy.ts": `export default { name: "policy", tools: [{ name: "noop", description: "${label}", parameters: { type: "object" }, handler: () => ({ label: "${label}" }) }] };`,
    },
    bundleHash: label,
    warnings: [],
    createdMs: Date.now(),
  });
}

const loadedSandboxes = () => pool.workers().flatMap((worker) => worker.tenants);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function pausedRun(deployments: Deployments): Promise<RunHandle> {
  const handle = (await deployments.runtimeFor("acme")).start({ sessionId: "sess_1", prompt: "go", options: { step: true } });
  for (let waited = 0; handle.pauseId === undefined && waited < 10_000; waited += 20) await sleep(20);
  expect(handle.pauseId).toBeDefined();
  return handle;
}

async function finish(handle: RunHandle) {
  const continued = new Set<string>();
  const done = handle.wait();
  for (;;) {
    const settled = await Promise.race([done, sleep(20).then(() => undefined)]);
    if (settled) return settled;
    const pause = handle.pauseId;
    if (pause !== undefined && !continued.has(pause)) {
      continued.add(pause);
      handle.continue(pause);
    }
  }
}

describe("runtimes of deployments no longer current", () => {
  it("stay while a run of theirs is in progress, and are dropped once it ended; a resume loads them again", async () => {
    const configRuntime = await createTenantRuntime(config, pool);
    const deployments = new Deployments({
      store,
      pool,
      tenants: new Map([["acme", config]]),
      configRuntimes: new Map([["acme", configRuntime]]),
      retireAfterMs: RETIRE_AFTER_MS,
    });
    await version("v1");
    await version("v2");
    const first = await deployments.deploy("acme", { scripts: [{ name: "policy", version: 1 }] });
    const firstSandbox = `acme~${first.id}`;
    const inFlight = await pausedRun(deployments);
    expect(loadedSandboxes()).toContain(firstSandbox);

    // A control: a deployment loaded without a run, made not current at the same time as the first one. Once its
    // sandbox is dropped, the retirement pass has run over the first deployment too.
    const idle = await deployments.deploy("acme", { scripts: [{ name: "policy", version: 2 }] });
    await deployments.runtimeFor("acme");
    const second = await deployments.deploy("acme", { scripts: [{ name: "policy", version: 2 }] });
    await waitUntil(() => !loadedSandboxes().includes(`acme~${idle.id}`), 20_000, "the idle deployment to be retired");
    // Not current any more, but its run is paused mid-way: it stays.
    expect(loadedSandboxes()).toContain(firstSandbox);
    expect((await finish(inFlight)).status).toBe("completed");

    await waitUntil(() => !loadedSandboxes().includes(firstSandbox), 20_000, "the first deployment to be retired once its run ended");
    expect(loadedSandboxes()).toContain(`acme~${second.id}`);

    // A resume of a run recorded on the first deployment loads it again, with its own version.
    const again = await deployments.runtimeFor("acme", {
      id: "run_old",
      deployment: { id: first.id, scripts: [], shadow: [] },
    } as unknown as Parameters<Deployments["runtimeFor"]>[1]);
    expect(again.deployment?.scripts).toEqual([{ name: "policy", version: 1, bundleHash: "v1" }]);
    const result = await finish(again.start({ sessionId: "sess_2", prompt: "go" }));
    expect(result.status).toBe("completed");
    expect(loadedSandboxes()).toContain(firstSandbox);
  }, 60_000);
});
