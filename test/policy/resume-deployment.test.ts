import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { api, readEvents, startServe } from "../server/serve-process.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { jsonLines, startCli } from "../helpers/cli.js";
import type { HookboxEvent } from "../../src/events/types.js";

const policy = (blocked: string[]) => ({
  "policy.ts": `import { defineScript } from "hookbox";
const blocked: string[] = ${JSON.stringify(blocked)};
export default defineScript({
  name: "policy",
  hooks: { beforeToolCall(p) { if (blocked.includes(p.call.id)) return { action: "deny", reason: "blocked" }; } },
});
`,
});

describe("a run started from a deployment, killed and resumed by hookbox resume", () => {
  it("goes on with the versions it started with, not the deployment current by then", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
    const server = await startServe({ config: fixture.config, store: fixture.store });
    const acme = api(server.url, "acme-key");
    let sessionId: string;
    try {
      expect((await acme.request("POST", "/v1/scripts", { name: "policy", entry: "policy.ts", files: policy([]) })).status).toBe(201);
      expect((await acme.request("POST", "/v1/scripts", { name: "policy", entry: "policy.ts", files: policy(["c2"]) })).status).toBe(201);
      expect((await acme.request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 1 }] })).status).toBe(200);
      ({ sessionId } = (await acme.request("POST", "/v1/sessions", {})).body);
      const run = await acme.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both", step: true });
      await readEvents(server.url, "acme-key", run.body.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
      expect((await acme.request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 2 }] })).status).toBe(200);
    } finally {
      await server.stop("SIGKILL");
    }

    const resume = startCli(["resume", "--store", fixture.store, "--session", sessionId, "--config", fixture.config, "--json"]);
    let printed = "";
    const continued = new Set<string>();
    resume.child.stdout.on("data", (chunk: Buffer) => {
      printed += chunk;
      for (const event of jsonLines(printed.slice(0, printed.lastIndexOf("\n") + 1)) as HookboxEvent[]) {
        if (event.type !== "debugger.pause" || continued.has(event.pauseId)) continue;
        continued.add(event.pauseId);
        resume.child.stdin.write(`${JSON.stringify({ continue: event.pauseId })}\n`);
      }
    });
    const result = await resume.done;
    expect(result.code, result.stderr).toBe(0);
    const events = jsonLines(result.stdout) as HookboxEvent[];
    const decisions = events.filter(
      (e): e is Extract<HookboxEvent, { type: "hook-decision" }> => e.type === "hook-decision" && e.script === "policy",
    );
    // c1 and c2 run in parallel: their decisions come in either order.
    expect(decisions.map((d) => [d.callId, d.decision.action, d.version]).sort()).toEqual([
      ["c1", "none", 1],
      ["c2", "none", 1],
    ]);
    const executed = readFileSync(fixture.log, "utf8")
      .split("\n")
      .filter((line) => line.startsWith(`tool ${sessionId} `));
    expect(executed.sort()).toEqual([`tool ${sessionId} c1`, `tool ${sessionId} c2`]);
  }, 120_000);
});
