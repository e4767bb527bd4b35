import { describe, expect, it } from "vitest";
import { rejection, script } from "./helpers.js";
import { redTeamPool } from "./redteam-helpers.js";

/*
 * Red team: what a script's registration sends out of the isolate. The manifest (names, descriptions, schemas,
 * onHookError) and a load error's message are the script's text; the runtime bounds the registration it returns
 * by the tenant's maxPayloadBytes, so it never outgrows the frame limit of the worker's reply (which the host
 * treats as a broken protocol and answers by killing the worker, with every co-tenant's call on it) and the
 * worker never parses megabytes of it outside a timed segment. One shared worker, with a small payload limit
 * (64 KiB: the reply frame limit is then 4 * 64 KiB + 1 MiB).
 */
const { pool, good } = redTeamPool({ workers: 1, maxPayloadBytes: 64 * 1024 });

const BIG = `"x".repeat(2_000_000)`;

describe("red team: a registration bigger than a reply frame", () => {
  it.each([
    ["a tool description", `export default { tools: [{ name: "t", description: ${BIG}, handler() { return 1; } }] };`],
    ["a middleware name", `const run = () => 1; export default { middleware: [{ name: ${BIG}, run }] };`],
    ["onHookError", `export default { onHookError: { blob: ${BIG} }, hooks: { beforeRun() {} } };`],
    [
      "many tools with big schemas",
      `export default { tools: Array.from({ length: 200 }, (_, i) => ({ name: "t" + i, parameters: { type: "object", description: "s".repeat(60_000) }, handler() { return 1; } })) };`,
    ],
    ["an unknown field's name (the load error's message)", `export default { [${BIG}]: 1 };`],
    [
      "a toJSON on Object.prototype",
      `Object.prototype.toJSON = function () { return ${BIG}; }; export default { hooks: { beforeRun() {} } };`,
    ],
  ])("%s: the load fails with SCRIPT_LOAD and the worker lives on", async (_label, source) => {
    await good.served();
    const workerBefore = pool.workers()[0]!.pid;
    const error = await rejection(pool.tenant("big-registration").load([script("big", source)]));
    expect(error.code, error.message).toBe("SCRIPT_LOAD");
    expect(error.message.length).toBeLessThan(4096 + 400);
    expect(error.message).toMatch(/byte limit|unknown field/);
    expect(pool.workers().map((worker) => worker.pid)).toContain(workerBefore);
    await good.served();
  });
});
