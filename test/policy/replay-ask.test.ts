import { describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli, startCli } from "../helpers/cli.js";
import { onJsonEvents, refundSteps, writeRefundFixture } from "../cli/approval-fixture.js";

/*
 * A run whose hook asked for an approval (answered on stdin) is recorded with the verdict `ask`: replaying the
 * same policy finds nothing changed, whatever the reviewer answered, and a policy that denies instead flips it.
 */
describe("hookbox replay of a call that asked for an approval", () => {
  it("records `ask`, replays the same policy as unchanged and a denying one as ask->deny", async () => {
    const fixture = writeRefundFixture(refundSteps({ orderId: "A17", amount: 250 }));
    const store = join(fixture.dir, "store.db");
    const run = startCli(["run", ...fixture.args, "--store", store, "--json"]);
    onJsonEvents(run.child, (event) => {
      if (event.type === "approval.requested") run.child.stdin.write(`${JSON.stringify({ approve: event.pauseId })}\n`);
    });
    const recorded = await run.done;
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(jsonLines(recorded.stdout).some((e) => e.type === "approval.resolved" && e.decision === "approved")).toBe(true);

    const policy = join(fixture.dir, "policy.ts");
    const same = await runCli(["replay", "--store", store, "--scripts", policy, "--json"]);
    expect(same.code, same.stderr).toBe(0);
    // beforeToolCall and afterToolCall of c1, and the run's beforeRun and beforeFinish.
    expect(jsonLines(same.stdout)).toEqual([{ runs: 1, calls: 4, same: 4, changed: {}, errors: 0 }]);

    const denying = join(fixture.dir, "deny.ts");
    writeFileSync(
      denying,
      `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { beforeToolCall(p) { if (Number(p.call.args.amount) > 100) return { action: "deny", reason: "no refunds over 100" }; } } });
`,
    );
    const flipped = await runCli(["replay", "--store", store, "--scripts", denying, "--json"]);
    expect(flipped.code, flipped.stderr).toBe(1);
    const lines = jsonLines(flipped.stdout);
    expect(lines[0]).toMatchObject({ callId: "c1", hook: "beforeToolCall", recorded: "ask", replayed: "deny" });
    expect(lines.at(-1)).toEqual({ runs: 1, calls: 4, same: 3, changed: { "ask->deny": 1 }, errors: 0 });
  }, 120_000);
});
