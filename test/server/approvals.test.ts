import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { jsonLines, startCli } from "../helpers/cli.js";
import { openStore } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { writeFixture } from "./fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";

/*
 * Approvals over HTTP against the real `hookbox serve` on loopback: the run's SSE stream shows the request,
 * POST /v1/runs/:runId/approvals/:pauseId answers it. A server SIGKILLed while an approval is open loses
 * nothing, and `hookbox resume` asks again (the call had not run, so beforeToolCall runs again).
 */

const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) { if (p.call.args.ask) return { action: "ask", reason: "record " + p.call.args.id + "?" }; },
} });
`;
const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", ask: true } }] }, { text: "done" }];

let servers: ServeProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop("SIGKILL")));
  servers = [];
});

async function serve(fixture: { config: string; store: string }) {
  const server = await startServe({ ...fixture });
  servers.push(server);
  return server;
}

async function startRun(server: ServeProcess, key: string) {
  const client = api(server.url, key);
  const session = await client.request("POST", "/v1/sessions", {});
  const run = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "record c1" });
  expect(run.status).toBe(202);
  const { messages } = await readEvents(server.url, key, run.body.runId, { stopWhen: (m) => m.event.type === "approval.requested" });
  const requested = messages.at(-1)!.event as Extract<HookboxEvent, { type: "approval.requested" }>;
  expect(requested.type).toBe("approval.requested");
  return { client, sessionId: session.body.sessionId as string, runId: run.body.runId as string, requested };
}

const readLog = (log: string) => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);

describe("POST /v1/runs/:runId/approvals/:pauseId", () => {
  it("refuses wrong ids (404), schema-breaking args and approvedBy on a reject (400 with the path) while the approval stays open; then approves with edited args and who approved", async () => {
    const fixture = writeFixture([
      { name: "acme", key: "acme-key", steps, scripts: { "policy.ts": policy } },
      { name: "other", key: "other-key", steps },
    ]);
    const server = await serve(fixture);
    const { client, runId, requested } = await startRun(server, "acme-key");
    const path = `/v1/runs/${runId}/approvals/${requested.pauseId}`;
    expect(requested).toMatchObject({
      callId: "c1",
      name: "record",
      args: { id: "c1", ask: true },
      reason: "record c1?",
      script: "policy",
    });

    expect((await client.request("POST", `/v1/runs/${runId}/approvals/pause_unknown`, { decision: "approve" })).status).toBe(404);
    const foreign = await api(server.url, "other-key").request("POST", path, { decision: "approve" });
    expect(foreign.status).toBe(404);
    // The same tenant's other run: its pause id is not this run's approval, and the other way round.
    const sibling = await startRun(server, "acme-key");
    expect((await client.request("POST", `/v1/runs/${sibling.runId}/approvals/${requested.pauseId}`, { decision: "approve" })).status).toBe(
      404,
    );
    expect((await client.request("POST", `/v1/runs/${runId}/approvals/${sibling.requested.pauseId}`, { decision: "approve" })).status).toBe(
      404,
    );
    expect((await client.request("POST", `/v1/runs/${sibling.runId}/cancel`)).status).toBe(200);
    const badBody = await client.request("POST", path, { decision: "maybe" });
    expect(badBody).toMatchObject({ status: 400, body: { error: { code: "VALIDATION", path: "$.decision" } } });
    const badArgs = await client.request("POST", path, { decision: "approve", args: { id: 5 } });
    expect(badArgs).toMatchObject({ status: 400, body: { error: { code: "VALIDATION", path: "$.args.id" } } });
    expect(badArgs.body.error.message).toContain("must be string");
    // approvedBy names who approved: on a reject it is refused whole (not dropped), and nothing is answered.
    const rejectedBy = await client.request("POST", path, { decision: "reject", reason: "no", approvedBy: "alice" });
    expect(rejectedBy).toMatchObject({
      status: 400,
      body: {
        error: { code: "VALIDATION", path: "$.approvedBy", message: expect.stringContaining("approvedBy goes with decision approve") },
      },
    });

    const open = await client.request("GET", `/v1/runs/${runId}`);
    expect(open.body.pauses).toEqual([expect.objectContaining({ pauseId: requested.pauseId, phase: "approval" })]);

    const approved = await client.request("POST", path, { decision: "approve", args: { id: "c1-edited" }, approvedBy: "alice" });
    expect(approved).toMatchObject({ status: 200, body: { pauseId: requested.pauseId, decision: "approved" } });
    expect((await client.request("POST", path, { decision: "reject" })).status).toBe(404); // answered once

    const { messages } = await readEvents(server.url, "acme-key", runId);
    const events = messages.map((m) => m.event);
    expect(events.filter((e) => e.type === "approval.resolved")).toEqual([
      expect.objectContaining({ decision: "approved", args: { id: "c1-edited" }, approvedBy: "alice" }),
    ]);
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ result: { recorded: "c1-edited" } });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    expect(server.stderr()).toBe("");
  });

  it("reject: the tool does not run; cancel during an open approval ends the run at once", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps, scripts: { "policy.ts": policy } }]);
    const server = await serve(fixture);
    const first = await startRun(server, "acme-key");
    const rejected = await first.client.request("POST", `/v1/runs/${first.runId}/approvals/${first.requested.pauseId}`, {
      decision: "reject",
      reason: "not today",
    });
    expect(rejected).toMatchObject({ status: 200, body: { decision: "rejected" } });
    const events = (await readEvents(server.url, "acme-key", first.runId)).messages.map((m) => m.event);
    expect(events.find((e) => e.type === "approval.resolved")).toMatchObject({ decision: "rejected", reason: "not today" });
    expect(events.some((e) => e.type === "tool-started")).toBe(false);
    expect(events.at(-1)).toMatchObject({ status: "completed" });

    const second = await startRun(server, "acme-key");
    expect((await second.client.request("POST", `/v1/runs/${second.runId}/cancel`)).status).toBe(200);
    const cancelled = (await readEvents(server.url, "acme-key", second.runId)).messages.map((m) => m.event);
    expect(cancelled.find((e) => e.type === "approval.resolved")).toMatchObject({ decision: "cancelled" });
    expect(cancelled.at(-1)).toMatchObject({ type: "run-finished", status: "cancelled" });
    expect(readLog(fixture.log).filter((line) => line.startsWith("tool "))).toEqual([]);
  });

  it("the tenant limit approvalTimeoutMs makes an unanswered approval a rejection", async () => {
    const fixture = writeFixture([
      { name: "acme", key: "acme-key", steps, scripts: { "policy.ts": policy }, limits: { approvalTimeoutMs: 300 } },
    ]);
    const server = await serve(fixture);
    const { runId, requested } = await startRun(server, "acme-key");
    expect(requested.deadlineMs - requested.timestampMs).toBeLessThanOrEqual(300);
    const events = (await readEvents(server.url, "acme-key", runId)).messages.map((m) => m.event);
    expect(events.find((e) => e.type === "approval.resolved")).toMatchObject({ decision: "timeout" });
    expect(events.some((e) => e.type === "tool-started")).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("a server SIGKILLed with an approval open loses nothing; hookbox resume asks again and the approved call runs once", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps, scripts: { "policy.ts": policy } }]);
    const server = await serve(fixture);
    const { sessionId, runId, requested } = await startRun(server, "acme-key");
    await server.stop("SIGKILL");

    const store = openStore(fixture.store);
    const stored = await store.listEvents(runId);
    expect(stored.find((e) => e.type === "approval.requested")).toEqual(requested);
    await store.close();

    const resume = startCli(["resume", "--store", fixture.store, "--session", sessionId, "--config", fixture.config, "--json"]);
    let buffer = "";
    const asked: string[] = [];
    resume.child.stdout.on("data", (chunk: string) => {
      buffer += chunk;
      for (const event of jsonLines(buffer.slice(0, buffer.lastIndexOf("\n") + 1)) as HookboxEvent[]) {
        if (event.type !== "approval.requested" || asked.includes(event.pauseId)) continue;
        asked.push(event.pauseId);
        resume.child.stdin.write(`${JSON.stringify({ approve: event.pauseId })}\n`);
      }
    });
    const result = await resume.done;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(asked).toHaveLength(1);
    expect(asked[0]).not.toBe(requested.pauseId); // a new approval, asked again
    const events = jsonLines(result.stdout) as HookboxEvent[];
    expect(events.find((e) => e.type === "approval.requested")).toMatchObject({ callId: "c1", args: { id: "c1", ask: true } });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "done" });
    // The host hook ran before each ask; the tool ran once, after the approval.
    expect(readLog(fixture.log).map((line) => line.split(" ")[0])).toEqual(["before", "before", "tool"]);

    const reopened = openStore(fixture.store);
    const all = await reopened.listEvents(runId);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    // One run-finished, at the real end; the interruption and the resume between.
    expect(all.filter((e) => ["run-finished", "run-interrupted", "run-resumed"].includes(e.type)).map((e) => e.type)).toEqual([
      "run-interrupted",
      "run-resumed",
      "run-finished",
    ]);
    expect(all.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    expect(await reopened.openPauses(runId)).toEqual([]);
    await reopened.close();
  });
});
