// What one ownership check costs serve: a session record read from the store (`Store.getSession`, a SQLite
// statement and the record's JSON) against the record serve remembers (`SessionManager.getRemembered`,
// src/session/known-sessions.ts). Nothing is queued, so no read commits writes first: the read alone.
// node scripts/bench/session-read.mjs [--store FILE] (after npm run build; default an in-memory SQLite store)
import { parseArgs } from "node:util";
import { openStore, SessionManager } from "../../dist/index.js";

const { values } = parseArgs({ options: { store: { type: "string" } } });
const store = openStore(values.store ?? ":memory:");
const manager = new SessionManager({
  store,
  runtimeFor: async () => {
    throw new Error("session-read runs nothing");
  },
});
// A tenant config of the bench's size (scripts/bench/http-workload.mjs: one script of a few KB).
const tenantConfig = {
  name: "acme",
  scripts: [{ source: "export default {};\n".repeat(200), filename: "policy.ts" }],
  model: "scripted:x",
};
const ids = [];
for (let i = 0; i < 200; i++) ids.push((await manager.create({ tenant: "acme", tenantConfig })).id);
const READS = 20_000;
for (const [label, read] of [
  ["store.getSession", (id) => store.getSession(id)],
  ["manager.getRemembered", (id) => manager.getRemembered(id)],
]) {
  const rounds = [];
  for (let round = 0; round < 3; round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < READS; i++) await read(ids[i % ids.length]);
    const used = process.cpuUsage(start);
    rounds.push(((used.user + used.system) / READS).toFixed(2));
  }
  process.stdout.write(`${label}: ${rounds.join(" / ")} us of CPU a read\n`);
}
await store.close();
