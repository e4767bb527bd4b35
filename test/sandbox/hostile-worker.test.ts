import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { beforePayload, rejection, script } from "./helpers.js";
import { waitUntil } from "../server/processes.js";

// The worker process is the second line of defence, not trusted: after a V8 escape its frames are the
// attacker's. Here a stand-in worker lies in each way the host could be hurt by (test/fixtures/hostile-worker).
const pool = createSandboxPool({
  workers: 1,
  wall: "none",
  workerPath: fileURLToPath(new URL("../fixtures/hostile-worker/worker.mjs", import.meta.url)),
});
afterAll(() => pool.close());

const policy = script("policy", `export default { hooks: { beforeToolCall() {} } };`);

async function callAs(tenantName: string) {
  const tenant = pool.tenant(tenantName);
  const run = await tenant.openRun({ runId: `run-${tenantName}`, scripts: await tenant.load([policy]) });
  return run.callHook("policy", "beforeToolCall", beforePayload());
}

describe("a worker that breaks the protocol", () => {
  it.each([
    ["value-not-text", "outcomes.0.value"],
    ["outcome-null", "outcomes.0"],
    ["header-not-object", "a broken frame (the header is not an object)"],
    ["header-not-json", "a broken frame"],
    ["blob-lengths-lie", "$blobs is not a list of byte lengths"],
    ["huge-frame", "over the 34603008-byte limit"],
    ["wrong-seq", "when"],
  ])("%s: the worker is killed and the call fails closed at once, naming the breach", async (tenantName, what) => {
    const error = await rejection(callAs(tenantName));
    // SANDBOX_CRASHED naming the breach, not the watchdog's SANDBOX_TIMEOUT: the lie itself ended the call.
    expect(error.code).toBe("SANDBOX_CRASHED");
    expect(error.message).toContain("it broke the protocol");
    expect(error.message).toContain(what);
    // The host goes on: a well-behaved tenant gets a new worker and its answer.
    expect(await callAs("honest")).toBeUndefined();
  });

  it("a second reply to one message is a breach too: the worker goes, the host stays", async () => {
    expect(await callAs("reply-twice")).toBeUndefined();
    const pidBefore = pool.workers()[0]?.pid;
    // The second reply comes after the first: wait for it to end the worker (no fixed sleep on a loaded machine).
    await waitUntil(() => !pool.workers().some((worker) => worker.pid === pidBefore), 10_000, "the worker that replied twice to be gone");
    expect(await callAs("honest")).toBeUndefined();
  });
});
