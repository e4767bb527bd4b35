// What creating a session costs the server's process (`SessionManager.create` on an in-memory SQLite store): its
// tenant's script named by path (recorded from the file, src/session/tenant-record.ts) against the same script given
// as source. CPU of the whole process, libuv's thread pool included (a file read is a few trips to it).
// node scripts/bench/session-create.mjs (after npm run build)
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, SessionManager } from "../../dist/index.js";

const dir = mkdtempSync(join(tmpdir(), "hookbox-session-create-"));
const path = join(dir, "policy.ts");
writeFileSync(path, "export default {};\n".repeat(200)); // a script of the bench's size, a few KB
const old = new Date(Date.now() - 60_000);
utimesSync(path, old, old);
await new Promise((resolve) => setTimeout(resolve, 2100)); // past the record's 2 s of doubt about a new file
const store = openStore(":memory:");
const manager = new SessionManager({
  store,
  runtimeFor: async () => {
    throw new Error("session-create runs nothing");
  },
});
const CREATES = 3000;
try {
  for (const [label, scripts] of [
    ["script by path", [{ path }]],
    ["script as source", [{ source: readFileSync(path, "utf8"), filename: path }]],
  ]) {
    const rounds = [];
    for (let round = 0; round < 3; round++) {
      const start = process.cpuUsage();
      for (let i = 0; i < CREATES; i++)
        await manager.create({ tenant: "acme", tenantConfig: { name: "acme", scripts, model: "scripted:x" } });
      const used = process.cpuUsage(start);
      rounds.push(((used.user + used.system) / CREATES).toFixed(1));
    }
    process.stdout.write(`${label}: ${rounds.join(" / ")} us of CPU a session\n`);
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
