import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Approvals, type ArgsCheck } from "../../src/loop/approvals.js";
import { EventLog } from "../../src/loop/event-log.js";
import type { HookboxEvent } from "../../src/events/types.js";

/*
 * A run's approvals (src/loop/approvals.ts) through their own class, with a real event log: what the loop's
 * tests reach only by timing (an approval asked on a run already cancelled, what an ended approval leaves
 * behind) and the audit record's exact fields.
 */

afterEach(() => {
  vi.useRealTimers();
});

const request = { callId: "c1", name: "refund", args: { amount: 5 }, reason: "over the cap", script: "cap" };

function approvals(options: { signal?: AbortSignal; checkArgs?: ArgsCheck; timeoutMs?: number } = {}) {
  const events: HookboxEvent[] = [];
  const log = new EventLog({ sessionId: "sess_a", inferenceId: "inf_a" }, { sink: (event) => events.push(event) });
  const signal = options.signal ?? new AbortController().signal;
  const approvals = new Approvals({
    events: log,
    signal,
    timeoutMs: options.timeoutMs ?? 60_000,
    checkArgs: options.checkArgs ?? (() => undefined),
  });
  return { approvals, events, signal };
}

/** Asks, and answers with `answer` as soon as the approval is open. */
async function askAndAnswer(
  subject: ReturnType<typeof approvals>,
  answer: Parameters<Approvals["answer"]>[1],
): Promise<{ outcome: unknown; answered: unknown }> {
  const asked = subject.approvals.ask(request);
  const [open] = subject.approvals.list();
  const answered = subject.approvals.answer(open!.pauseId, answer);
  return { outcome: await asked, answered };
}

describe("approvals", () => {
  it("one asked on a run already cancelled throws the run's reason at once and opens nothing", async () => {
    const controller = new AbortController();
    controller.abort(new Error("cancelled before the ask"));
    const subject = approvals({ signal: controller.signal, timeoutMs: 600_000 });
    await expect(subject.approvals.ask(request)).rejects.toThrow("cancelled before the ask");
    expect(subject.approvals.list()).toEqual([]);
    expect(subject.events).toEqual([]);
  });

  it("an answered one leaves no timer and no listener on the run's signal behind", async () => {
    vi.useFakeTimers();
    const subject = approvals();
    expect(getEventListeners(subject.signal, "abort")).toHaveLength(0);
    const { outcome } = await askAndAnswer(subject, { decision: "approve" });
    expect(outcome).toMatchObject({ decision: "approved" });
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(subject.signal, "abort")).toHaveLength(0);
  });

  it("cancelling the run ends an open one as cancelled, throwing the run's reason", async () => {
    const controller = new AbortController();
    const subject = approvals({ signal: controller.signal });
    const asked = subject.approvals.ask(request);
    controller.abort(new Error("the run was cancelled"));
    await expect(asked).rejects.toThrow("the run was cancelled");
    expect(subject.approvals.list()).toEqual([]);
    expect(subject.events.map((event) => event.type === "approval.resolved" && event.decision)).toEqual([false, "cancelled"]);
  });

  it("with no answer it ends at its deadline as a timeout naming the wait, and its deadline is shown", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const subject = approvals({ timeoutMs: 5000 });
    const asked = subject.approvals.ask({ ...request, timeoutMs: 2000 });
    expect(subject.approvals.list()[0]?.deadlineMs).toBe(1_002_000);
    await vi.advanceTimersByTimeAsync(1999);
    expect(subject.approvals.list()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await asked).toEqual({ decision: "timeout", reason: "no answer to the approval within 2000 ms" });
  });

  it("an approval without an edit runs what was shown, unchecked; an edit is checked, at the root too", async () => {
    const refuseAll: ArgsCheck = () => ({ segments: [], message: "must be an object" });
    const subject = approvals({ checkArgs: refuseAll });
    const asked = subject.approvals.ask(request);
    const [open] = subject.approvals.list();
    expect(subject.approvals.answer(open!.pauseId, { decision: "approve", args: { amount: 7 } })).toEqual({
      ok: false,
      code: "TOOL_ARGS",
      message: "args must be an object (tool refund)",
      path: [],
    });
    expect(subject.approvals.answer(open!.pauseId, { decision: "approve" })).toEqual({ ok: true, decision: "approved" });
    expect(await asked).toEqual({ decision: "approved", args: { amount: 5 } });
  });

  it("the audit record keeps the reviewer's reason and name, trimmed; blank ones are left out", async () => {
    const named = approvals();
    expect(await askAndAnswer(named, { decision: "approve", reason: "  looks right ", approvedBy: "  alice@example.com " })).toEqual({
      answered: { ok: true, decision: "approved" },
      outcome: { decision: "approved", args: { amount: 5 }, reason: "looks right", approvedBy: "alice@example.com" },
    });
    expect(named.events.at(-1)).toMatchObject({
      type: "approval.resolved",
      decision: "approved",
      reason: "looks right",
      approvedBy: "alice@example.com",
    });
    const blank = approvals();
    expect((await askAndAnswer(blank, { decision: "approve", reason: "  ", approvedBy: " " })).outcome).toEqual({
      decision: "approved",
      args: { amount: 5 },
    });
  });
});
