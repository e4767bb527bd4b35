import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { openPostgresStore } from "../../src/store/index.js";
import { SessionManager } from "../../src/session/manager.js";
import { usePgServer } from "../helpers/postgres.js";
import { tempDir } from "../store/helpers.js";
import { FakeRuntime } from "./fake-runtime.js";

/*
 * SessionManager.runningTenant on a cluster (PostgreSQL) store: never answered from memory, since a node that has
 * missed the end of its lease cannot know that another node finished the run (and its session was deleted) since.
 */

const pg = usePgServer();

it("on a cluster store a run executing here is still read from the store (runningTenant is undefined)", async () => {
  const dir = tempDir("hookbox-session-");
  const script = join(dir, "policy.ts");
  writeFileSync(script, "export default {};\n");
  const store = await openPostgresStore(await pg.createDatabase("hookbox_running_tenant"));
  const runtime = new FakeRuntime("acme", [{ toolCalls: [{ id: "c1", name: "a" }] }, { text: "done" }]);
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  try {
    const session = await manager.create({
      tenant: "acme",
      tenantConfig: { name: "acme", scripts: [{ path: script }], model: { kind: "scripted", file: join(dir, "model.json") } },
    });
    const handle = await session.run("go", { step: true });
    for await (const event of manager.events(handle.runId)) if (event.type === "debugger.pause") break;
    expect(manager.liveRun(handle.runId)).toBeDefined();
    expect(manager.runningTenant(handle.runId)).toBeUndefined();
  } finally {
    await manager.close();
    await store.close();
  }
});
