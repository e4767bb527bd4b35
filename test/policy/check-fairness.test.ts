import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startServe, type ServeProcess } from "../server/serve-process.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";

/*
 * Uploads are type-checked one at a time in one worker thread. One tenant's pile of slow uploads must not make
 * another tenant's trivial upload wait behind all of them: tenants take turns, so it waits for about one check.
 * Compared by order of completion, not by wall-clock time.
 */

let server: ServeProcess;
const SLOW_UPLOADS = 8;

beforeAll(async () => {
  // Each upload also loads in a throwaway sandbox under the tenant's CPU limit: 2 s, not 200 ms, so a load slowed
  // by a loaded machine is not refused (400) in a test about the order of type-checks.
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: twoToolSteps, limits: { maxUploadsInFlight: SLOW_UPLOADS, cpuMs: 2000 } },
    { name: "globex", key: "globex-key", steps: twoToolSteps, limits: { cpuMs: 2000 } },
  ]);
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

/** Type-checks for a second or more: a 10,000-member template literal union, filtered and assigned. */
const slowPolicy = (tag: number) => `import { defineScript } from "hookbox";
type D = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9";
type N = \`\${D}\${D}\${D}\${D}\`;
type M = Exclude<N, \`${tag % 10}\${string}\`>;
const m: M = "${(tag + 1) % 10}000";
export default defineScript({ name: "slow", hooks: { beforeToolCall() { void m; } } });
`;
const trivialPolicy = `import { defineScript } from "hookbox";\nexport default defineScript({ name: "quick" });\n`;

describe("type-checking uploads of several tenants", () => {
  it("gives each tenant a turn: another tenant's trivial upload waits for about one slow check, not for all of them", async () => {
    const order: string[] = [];
    const upload = (key: string, name: string, source: string) =>
      api(server.url, key)
        .request("POST", "/v1/scripts", { name, entry: "policy.ts", files: { "policy.ts": source } })
        .then((answer) => {
          order.push(name);
          return answer;
        });
    const slow = Array.from({ length: SLOW_UPLOADS }, (_, i) => upload("acme-key", `slow-${i}`, slowPolicy(i)));
    // Once one slow upload is done, the others are certainly queued before the quick one arrives.
    await Promise.race(slow);
    const quick = await upload("globex-key", "quick", trivialPolicy);
    expect(quick.status, JSON.stringify(quick.body)).toBe(201);
    const answers = await Promise.all(slow);
    expect(answers.map((answer) => answer.status)).toEqual(Array(SLOW_UPLOADS).fill(201));
    // Before it finished: the slow upload that was done when it arrived, one past its check (loading in the
    // sandbox), the check in progress; the other slow ones (four or more) were still waiting their turn.
    expect(order.indexOf("quick"), order.join(" ")).toBeLessThanOrEqual(3);
  }, 120_000);
});
