import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonLines, runCli, startCli } from "../helpers/cli.js";
import { openStore } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { onJsonEvents, refundSteps, writeRefundFixture } from "./approval-fixture.js";

/*
 * Approvals through the real CLI (`hookbox run --json` in a child process): the run pauses at `ask`, and
 * stdin lines answer it. What the tool ran with is read from the tool's own events; what the model saw
 * from the run's final snapshot in a real SQLite store.
 */

type Requested = Extract<HookboxEvent, { type: "approval.requested" }>;

/** Runs the CLI and answers each approval request with the lines `answer` returns. */
async function runAnswering(options: { steps?: unknown[]; extra?: string[]; answer?: (request: Requested) => string[] }) {
  const fixture = writeRefundFixture(options.steps);
  const store = join(fixture.dir, "store.db");
  const cli = startCli(["run", ...fixture.args, "--json", "--store", store, "--session", "s1", ...(options.extra ?? [])]);
  onJsonEvents(cli.child, (event) => {
    if (event.type === "approval.requested" && options.answer) {
      for (const line of options.answer(event)) cli.child.stdin.write(`${line}\n`);
    }
  });
  const result = await cli.done;
  const events = jsonLines(result.stdout) as HookboxEvent[];
  return { ...result, events, store, child: cli.child };
}

async function finalToolUse(store: string) {
  const db = openStore(store);
  try {
    const [run] = await db.listRuns("s1");
    const final = (await db.listSnapshots(run.id)).at(-1)!;
    return final.turn.blocks.find((b) => b.kind === "tool_use")?.payload;
  } finally {
    await db.close();
  }
}

const ofType = <T extends HookboxEvent["type"]>(events: HookboxEvent[], type: T) =>
  events.filter((e): e is Extract<HookboxEvent, { type: T }> => e.type === type);

describe("hookbox run: approvals answered on stdin (--json)", () => {
  it("approve: the tool runs with the original arguments; the request carries call, reason, script and deadline", async () => {
    const run = await runAnswering({ answer: (r) => [JSON.stringify({ approve: r.pauseId })] });
    expect(run.code).toBe(0);
    const [requested] = ofType(run.events, "approval.requested");
    expect(requested).toMatchObject({
      callId: "c1",
      name: "refund",
      args: { orderId: "A17", amount: 250 },
      reason: "refund of 250 is over 100",
      script: "policy",
    });
    expect(requested.pauseId).toMatch(/^pause_/);
    expect(requested.deadlineMs - requested.timestampMs).toBeGreaterThan(299_000); // the 300000 ms default
    expect(ofType(run.events, "approval.resolved")).toEqual([
      expect.objectContaining({ pauseId: requested.pauseId, callId: "c1", decision: "approved", args: { orderId: "A17", amount: 250 } }),
    ]);
    expect(ofType(run.events, "tool-finished")[0]).toMatchObject({ name: "refund", result: { refunded: 250 } });
    expect(run.events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("approve with edited arguments: the tool and the later hooks get the edit; a schema-breaking edit is refused and the approval stays open", async () => {
    const run = await runAnswering({
      answer: (r) => [
        JSON.stringify({ approve: r.pauseId, args: { orderId: "A17", amount: 5000 } }),
        JSON.stringify({ approve: "pause_not-this-one" }),
        JSON.stringify({ approve: r.pauseId, args: { orderId: "A17", amount: 100 } }),
      ],
    });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("args.amount must be <= 1000 (tool refund); the approval stays open");
    expect(run.stderr).toContain("pause_not-this-one is not this run's open approval");
    const resolved = ofType(run.events, "approval.resolved");
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({ decision: "approved", args: { orderId: "A17", amount: 100 } });
    expect(ofType(run.events, "tool-started")[0]).toMatchObject({ args: { orderId: "A17", amount: 100 } });
    expect(ofType(run.events, "tool-finished")[0]).toMatchObject({ result: { refunded: 100 } });
    // audit (loaded after policy) ran after the approval, with the approved arguments.
    const audit = ofType(run.events, "log").find((e) => e.script === "audit");
    expect(audit?.message).toBe('audit sees {"orderId":"A17","amount":100}');
    expect(audit!.seq).toBeGreaterThan(resolved[0].seq);
  });

  it("approve with a reason and approvedBy: approval.resolved keeps both for the audit trail", async () => {
    const run = await runAnswering({
      answer: (r) => [JSON.stringify({ approve: r.pauseId, reason: "known customer", approvedBy: "alice@example.com" })],
    });
    expect(run.code).toBe(0);
    expect(ofType(run.events, "approval.resolved")).toEqual([
      expect.objectContaining({ decision: "approved", reason: "known customer", approvedBy: "alice@example.com" }),
    ]);
    expect(run.stdout).not.toContain("stdin:");
  });

  it("reject: the tool does not run and the model sees a denial carrying the reviewer's reason", async () => {
    const run = await runAnswering({ answer: (r) => [JSON.stringify({ reject: r.pauseId, reason: "customer already refunded" })] });
    expect(run.code).toBe(0);
    expect(ofType(run.events, "approval.resolved")[0]).toMatchObject({ decision: "rejected", reason: "customer already refunded" });
    expect(ofType(run.events, "tool-started")).toHaveLength(0);
    expect(ofType(run.events, "log").filter((e) => e.script === "audit")).toHaveLength(0);
    expect(await finalToolUse(run.store)).toMatchObject({
      error: { code: "DENIED", message: "denied by policy: rejected by the reviewer: customer already refunded" },
    });
  });

  it("timeout: --approval-timeout-ms, or the hook's shorter timeoutMs, ends it as a rejection", async () => {
    const run = await runAnswering({ extra: ["--approval-timeout-ms", "400"] });
    expect(run.code).toBe(0);
    expect(ofType(run.events, "approval.resolved")[0]).toMatchObject({
      decision: "timeout",
      reason: "no answer to the approval within 400 ms",
    });
    expect(ofType(run.events, "tool-started")).toHaveLength(0);
    expect(await finalToolUse(run.store)).toMatchObject({ error: { code: "DENIED" } });

    // The hook asks for 300 ms within a run allowing the default 300000 ms.
    const short = await runAnswering({ steps: refundSteps({ orderId: "A17", amount: 250, askTimeoutMs: 300 }) });
    const [requested] = ofType(short.events, "approval.requested");
    expect(requested.deadlineMs - requested.timestampMs).toBeLessThan(1000);
    expect(ofType(short.events, "approval.resolved")[0]).toMatchObject({ decision: "timeout" });
  });

  it('stdin closed (CI, < /dev/null): every open approval is rejected at once as "stdin closed", not after its timeout', async () => {
    // Two refunds in one response: two approvals open at once.
    const steps = [
      {
        toolCalls: [
          { id: "c1", name: "refund", args: { orderId: "A17", amount: 250 } },
          { id: "c2", name: "refund", args: { orderId: "A18", amount: 300 } },
        ],
      },
      { text: "done" },
    ];
    const fixture = writeRefundFixture(steps);
    const cli = startCli(["run", ...fixture.args, "--json"]);
    cli.child.stdin.end();
    const started = Date.now();
    const result = await cli.done;
    expect(Date.now() - started).toBeLessThan(60_000); // the default approval timeout is 300 s
    const events = jsonLines(result.stdout) as HookboxEvent[];
    expect(result.code, result.stderr).toBe(0);
    expect(ofType(events, "approval.requested")).toHaveLength(2);
    // The two calls are made in parallel: their approvals are resolved in either order.
    expect(
      ofType(events, "approval.resolved")
        .map((e) => [e.callId, e.decision, e.reason])
        .sort(),
    ).toEqual([
      ["c1", "rejected", "stdin closed"],
      ["c2", "rejected", "stdin closed"],
    ]);
    expect(ofType(events, "tool-started")).toHaveLength(0);
  });

  it("hookbox resume --approval-timeout-ms bounds the approvals the resumed run asks again", async () => {
    const fixture = writeRefundFixture();
    const store = join(fixture.dir, "store.db");
    const killed = startCli(["run", ...fixture.args, "--json", "--store", store, "--session", "s1"]);
    onJsonEvents(killed.child, (event) => {
      if (event.type === "approval.requested") killed.child.kill("SIGKILL");
    });
    await killed.done;
    const refused = await runCli(["resume", "--store", store, "--session", "s1", "--approval-timeout-ms", "soon"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--approval-timeout-ms must be a positive integer, got "soon"');

    const resumed = startCli(["resume", "--store", store, "--session", "s1", "--json", "--approval-timeout-ms", "300"]);
    const result = await resumed.done; // stdin stays open: only the timeout can end the approval
    const events = jsonLines(result.stdout) as HookboxEvent[];
    const [requested] = ofType(events, "approval.requested");
    expect(requested.deadlineMs - requested.timestampMs).toBeLessThan(1000);
    expect(ofType(events, "approval.resolved")[0]).toMatchObject({
      decision: "timeout",
      reason: "no answer to the approval within 300 ms",
    });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("SIGINT while an approval is open cancels at once: resolved as cancelled, run cancelled, exit 130", async () => {
    const fixture = writeRefundFixture();
    const cli = startCli(["run", ...fixture.args, "--json"]);
    onJsonEvents(cli.child, (event) => {
      if (event.type === "approval.requested") cli.child.kill("SIGINT");
    });
    const result = await cli.done;
    const events = jsonLines(result.stdout) as HookboxEvent[];
    expect(result.code).toBe(130);
    expect(ofType(events, "approval.resolved")[0]).toMatchObject({ decision: "cancelled" });
    expect(ofType(events, "tool-started")).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "cancelled" });
  });

  it("works in step mode too: pauses and approvals are answered by their own lines", async () => {
    const fixture = writeRefundFixture();
    const cli = startCli(["run", ...fixture.args, "--json", "--step"]);
    onJsonEvents(cli.child, (event) => {
      if (event.type === "debugger.pause") cli.child.stdin.write(`${JSON.stringify({ continue: event.pauseId })}\n`);
      if (event.type === "approval.requested") cli.child.stdin.write(`${JSON.stringify({ approve: event.pauseId })}\n`);
    });
    const result = await cli.done;
    const events = jsonLines(result.stdout) as HookboxEvent[];
    expect(result.code).toBe(0);
    expect(
      events.map((e) => e.type).filter((t) => t.startsWith("debugger.") || t.startsWith("approval.") || t === "tool-finished"),
    ).toEqual([
      "debugger.pause",
      "debugger.continue",
      "approval.requested",
      "approval.resolved",
      "tool-finished",
      "debugger.pause",
      "debugger.continue",
    ]);
  });

  it("an open approval is a stored pause until it is answered", async () => {
    const fixture = writeRefundFixture();
    const store = join(fixture.dir, "store.db");
    const cli = startCli(["run", ...fixture.args, "--json", "--store", store, "--session", "s1"]);
    let seen: unknown;
    onJsonEvents(cli.child, (event) => {
      if (event.type !== "approval.requested") return;
      const db = openStore(store);
      void db
        .listRuns("s1")
        .then(([run]) => db.openPauses(run.id))
        .then((pauses) => {
          seen = pauses;
          return db.close();
        })
        .then(() => cli.child.stdin.write(`${JSON.stringify({ approve: event.pauseId })}\n`));
    });
    const result = await cli.done;
    expect(result.code).toBe(0);
    const [requested] = ofType(jsonLines(result.stdout) as HookboxEvent[], "approval.requested");
    expect(seen).toEqual([
      expect.objectContaining({
        pauseId: requested.pauseId,
        phase: "approval",
        deadlineMs: requested.deadlineMs,
        pendingToolCalls: [
          { id: "c1", name: "refund", args: { orderId: "A17", amount: 250 }, reason: "refund of 250 is over 100", script: "policy" },
        ],
      }),
    ]);
    const db = openStore(store);
    expect(await db.openPauses((await db.listRuns("s1"))[0].id)).toEqual([]);
    await db.close();
  });
});
