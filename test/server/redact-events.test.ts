import { afterAll, beforeAll, expect, it } from "vitest";
import { dirname } from "node:path";
import { writeFixture } from "./fixture.js";
import { api, startServe, type ServeProcess } from "./serve-process.js";
import { runToEnd } from "./redteam-server.js";

/*
 * A host tool's error can name a host path (the operator's files, the store). The event stream a tenant reads
 * carries tool errors with those paths replaced by `<host>` (docs/server.md), and so does the session's view
 * (GET /v1/sessions/:id, whose turn holds the error the tool block recorded); the operator's own log keeps them.
 */

let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;

beforeAll(async () => {
  fixture = writeFixture([
    {
      name: "acme",
      key: "acme-key",
      steps: [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", failWithHostPath: true } }] }, { text: "done" }],
    },
  ]);
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

it("a tool error naming a host path reaches the tenant's event stream with the path redacted", async () => {
  const hostDir = dirname(fixture.config);
  const { events, final } = await runToEnd(server.url, "acme-key");
  expect(final.status).toBe("completed");
  const failed = events.find((e) => e.type === "tool-finished" && e.callId === "c1");
  expect(failed).toMatchObject({ type: "tool-finished", error: { message: "cannot append to <host>/executions.log", code: "TOOL_ERROR" } });
  expect(JSON.stringify(events)).not.toContain(hostDir);
}, 60_000);

it("the session's view shows the same tool error redacted in its turn", async () => {
  const hostDir = dirname(fixture.config);
  const { sessionId } = await runToEnd(server.url, "acme-key");
  const view = await api(server.url, "acme-key").request("GET", `/v1/sessions/${sessionId}`);
  expect(view.status).toBe(200);
  const blocks = (view.body.turns.at(-1).turn.blocks as { kind: string; payload: { id?: string; error?: unknown } }[]).filter(
    (block) => block.kind === "tool_use" && block.payload.error !== undefined,
  );
  expect(blocks.map((block) => block.payload.error)).toEqual([{ message: "cannot append to <host>/executions.log", code: "TOOL_ERROR" }]);
  expect(JSON.stringify(view.body)).not.toContain(hostDir);
}, 60_000);
