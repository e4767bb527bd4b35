import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli.js";
import { api, readEvents, startServe } from "./serve-process.js";

/*
 * The README's inspector command as a newcomer runs it: `hookbox serve` on examples/serve.json (the refund-approval
 * example as a served tenant, its key from HOOKBOX_DEMO_KEY). A run asks for two approvals, which are answered
 * through the API the inspector's approvals inbox uses, and the run completes.
 */

describe("examples/serve.json, the config of the README's inspector command", () => {
  it("serves the refund-approval tenant: a run waits in the approvals inbox, and finishes once answered", async () => {
    const server = await startServe({
      config: join(repoRoot, "examples/serve.json"),
      store: join(mkdtempSync(join(tmpdir(), "hookbox-example-serve-")), "hookbox.db"),
      env: { HOOKBOX_DEMO_KEY: "demo-key" },
    });
    try {
      const client = api(server.url, "demo-key");
      const { body: session } = await client.request("POST", "/v1/sessions", {});
      const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "refund my orders" });
      expect(started.status).toBe(202);
      const reading = readEvents(server.url, "demo-key", started.body.runId);
      let open: { pauseId: string; args: { orderId: string } }[] = [];
      for (const deadline = Date.now() + 30_000; open.length < 2 && Date.now() < deadline;) {
        open = (await client.request("GET", "/v1/approvals")).body.approvals;
        if (open.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(open.map((approval) => approval.args.orderId).sort()).toEqual(["A17", "B20"]);
      for (const approval of open) {
        const decision = approval.args.orderId === "A17" ? "approve" : "reject";
        const answered = await client.request("POST", `/v1/runs/${started.body.runId}/approvals/${approval.pauseId}`, { decision });
        expect(answered.status).toBe(200);
      }
      const events = (await reading).messages.map((message) => message.event);
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
      const refunded = events.filter((event) => event.type === "tool-finished" && !("error" in event && event.error));
      expect(refunded.map((event) => (event as { callId: string }).callId).sort()).toEqual(["c1", "c3"]);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
