import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { api, readEvents, startServe } from "./serve-process.js";
import { writeFixture } from "./fixture.js";

/*
 * A restart reuses the bundles of the start before it (docs/server.md, "Start-up"): the real `hookbox serve`
 * started twice on one script cache, its /metrics saying where each bundle came from, and a run proving which
 * script ran. A script changed on disk is bundled again; a cache directory others may write to is not used.
 */

const deny = (reason: string) => `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { beforeToolCall: () => ({ action: "deny", reason: ${JSON.stringify(reason)} }) } });
`;
const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }];

function fixtureWithCache(cacheDir: string) {
  return writeFixture([{ name: "acme", key: "acme-key", steps, scripts: { "policy.ts": deny("first version") } }], {
    server: { adminKeys: [{ sha256: createHash("sha256").update("admin-key").digest("hex") }], scriptCache: cacheDir },
  });
}

/** One run of acme on a fresh server: the denial's reason (which script ran), and where its bundle came from. */
async function startAndRun(fixture: { config: string; store: string }) {
  const server = await startServe(fixture);
  try {
    const client = api(server.url, "acme-key");
    const { body: session } = await client.request("POST", "/v1/sessions", {});
    const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
    expect(started.status).toBe(202);
    const events = (await readEvents(server.url, "acme-key", started.body.runId)).messages.map((message) => message.event);
    const decision = events.find((event) => event.type === "hook-decision" && event.script === "policy") as
      { decision?: { reason?: string } } | undefined;
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer admin-key" } })).text();
    const bundles = (from: string) => Number(new RegExp(`hookbox_script_bundles_total\\{from="${from}"\\} (\\d+)`).exec(metrics)?.[1]);
    return { reason: decision?.decision?.reason, esbuild: bundles("esbuild"), disk: bundles("disk"), stderr: server.stderr() };
  } finally {
    await server.stop();
  }
}

describe("the script cache of hookbox serve", () => {
  it("a restart takes the bundle from disk instead of esbuild; a script changed on disk is bundled again", async () => {
    const cacheDir = join(mkdtempSync(join(tmpdir(), "hookbox-script-cache-")), "cache");
    const fixture = fixtureWithCache(cacheDir);
    expect(await startAndRun(fixture)).toMatchObject({ reason: "first version", esbuild: 1, disk: 0 });
    expect(await startAndRun(fixture)).toMatchObject({ reason: "first version", esbuild: 0, disk: 1 });
    writeFileSync(join(fixture.dir, "policy.ts"), deny("second version"));
    expect(await startAndRun(fixture)).toMatchObject({ reason: "second version", esbuild: 1, disk: 0 });
    expect(await startAndRun(fixture)).toMatchObject({ reason: "second version", esbuild: 0, disk: 1 });
  }, 120_000);

  it("a cache directory other users may write to is not used, and the server says so and serves", async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), "hookbox-script-cache-open-"));
    chmodSync(cacheDir, 0o777);
    const fixture = fixtureWithCache(cacheDir);
    const first = await startAndRun(fixture);
    expect(first).toMatchObject({ reason: "first version", esbuild: 1, disk: 0 });
    expect(first.stderr).toContain(
      `hookbox serve: no script cache (bundles are built at every start): ${cacheDir} may be written by other users`,
    );
    expect(await startAndRun(fixture)).toMatchObject({ esbuild: 1, disk: 0 });
  }, 120_000);
});
