import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { api, startServe, type ServeProcess } from "../server/serve-process.js";
import { runToEnd } from "../server/redteam-server.js";
import { writeFixture } from "../server/fixture.js";
import { descendants } from "../server/processes.js";

/*
 * Replays (POST /v1/replays) and uploads are a tenant's work like its runs: bounded, stopped when nobody waits
 * for them, charged against the tenant's own standing. Through a real `hookbox serve`.
 */

let server: ServeProcess;
// Wide enough that a trial load never times out on a loaded machine; a spinning hook still ends at 300 ms.
const limits = { cpuMs: 300, wallMs: 2000 };
/** One inference with ten tool calls: each run records beforeRun, 10 x (beforeToolCall, afterToolCall), beforeFinish. */
const tenCalls = [
  { toolCalls: Array.from({ length: 10 }, (_, i) => ({ id: `c${i}`, name: "record", args: { id: `c${i}` } })) },
  { text: "done" },
];
const CALLS_PER_RUN = 22;
const RUNS = 5;

/** A victim script: sandboxed run and tool hooks; `beforeRun` spins on the prompt "spin" (to get quarantined). */
const victimScript = `export default {
  name: "victim",
  hooks: {
    beforeRun(p) { if (p.prompt === "spin") while (true) {} },
    beforeToolCall() {},
    afterToolCall() {},
  },
};
`;

beforeAll(async () => {
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: tenCalls, limits },
    // The victim's own limits are wide: its hooks must not time out on a loaded machine (only the attacker's spin).
    { name: "globex", key: "globex-key", steps: tenCalls, limits: { cpuMs: 1000, wallMs: 5000 }, scripts: { "victim.ts": victimScript } },
    { name: "lab", key: "lab-key", steps: tenCalls, limits: { ...limits, replayCpuMs: 600 } },
  ]);
  server = await startServe({ config: fixture.config, store: fixture.store });
  for (const key of ["acme-key", "lab-key"]) for (let i = 0; i < RUNS; i++) await runToEnd(server.url, key);
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

/** A version whose every hook runs `body`. */
async function upload(key: string, name: string, body: string): Promise<void> {
  const hooks = ["beforeRun", "beforeToolCall", "afterToolCall", "onToolError", "beforeFinish"].map((hook) => `${hook}() { ${body} }`);
  const source = `import { defineScript } from "hookbox";\nexport default defineScript({ name: ${JSON.stringify(name)}, hooks: { ${hooks.join(", ")} } });\n`;
  const answer = await api(server.url, key).request("POST", "/v1/scripts", { name, entry: "policy.ts", files: { "policy.ts": source } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
}

/** Burns about `ms` of CPU, within the tenant's 300 ms per call: the hook proceeds. */
const burn = (ms: number) => `const end = Date.now() + ${ms}; while (Date.now() < end) {}`;

/**
 * Burns about 40 ms of CPU by counting (a million clock reads), but for at most 250 ms of wall time, within the
 * tenant's 300 ms per call. Counting keeps the CPU per call near 40 ms on a loaded machine, where a wall-time burn
 * would get only a sliver of a CPU and never reach the CPU budget.
 */
const burnCpu = `let reads = 0; const end = Date.now() + 250; while (reads < 1e6 && Date.now() < end) reads++;`;

/** POST /v1/replays of version 1 of `name`, aborted by the client after `abortMs` when given. */
function startReplay(key: string, name: string, abortMs?: number): Promise<{ status: number; body: any }> {
  const signal = abortMs === undefined ? undefined : AbortSignal.timeout(abortMs);
  return fetch(`${server.url}/v1/replays`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ scripts: [{ name, version: 1 }] }),
    ...(signal ? { signal } : {}),
  }).then(
    async (response) => ({ status: response.status, body: await response.json() }),
    () => ({ status: 0, body: "abandoned" }),
  );
}

/** CPU time (user + system, ms) the server's descendants (its sandbox workers) used so far. */
function workersCpuMs(): number {
  let ticks = 0;
  for (const pid of descendants(server.child.pid!)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime: fields 14 and 15
    } catch {
      /* exited meanwhile */
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function victimRunMs(count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const { final } = await runToEnd(server.url, "globex-key");
    expect(final).toMatchObject({ status: "completed" });
    times.push(performance.now() - started);
  }
  return times;
}

describe("replays and uploads are bounded per tenant", () => {
  it("stops a replay when the hooks fail ten calls in a row, saying so", async () => {
    await upload("lab-key", "throws", `throw new Error("broken");`);
    const answer = await startReplay("lab-key", "throws");
    expect(answer.status).toBe(200);
    expect(answer.body.summary).toMatchObject({
      calls: 10,
      errors: 10,
      stopped: { code: "REPLAY_HOOK_FAILURES", message: expect.stringContaining("10 calls in a row") },
    });
  });

  it("stops a replay at the tenant's sandbox CPU budget (replayCpuMs), saying so", async () => {
    await upload("lab-key", "burn-cpu", burnCpu);
    const answer = await startReplay("lab-key", "burn-cpu");
    expect(answer.status).toBe(200);
    const { summary } = answer.body;
    expect(summary.stopped).toMatchObject({ code: "REPLAY_CPU_BUDGET", message: expect.stringContaining("the budget is 600 ms") });
    expect(summary.calls).toBeGreaterThan(0);
    expect(summary.calls).toBeLessThan(RUNS * CALLS_PER_RUN);
  });

  it("refuses a second replay in progress and a third upload being checked with 429, and frees the slots after", async () => {
    await upload("lab-key", "burn", burn(40));
    const first = startReplay("lab-key", "burn");
    await waitUntilBusy("lab-key", "burn");
    const second = await startReplay("lab-key", "burn");
    expect(second).toMatchObject({ status: 429, body: { error: { code: "TOO_MANY_REPLAYS" } } });
    expect((await first).status).toBe(200);
    expect((await startReplay("lab-key", "burn")).status).toBe(200);

    const slowTypes = (tag: number) =>
      `import { defineScript } from "hookbox";\ntype D = "0"|"1"|"2"|"3"|"4"|"5"|"6"|"7"|"8"|"9";\ntype N = \`\${D}\${D}\${D}\${D}\`;\nconst m: Exclude<N, \`${tag}\${string}\`> = "${tag + 1}000";\nexport default defineScript({ name: "t${tag}", hooks: { beforeRun() { void m; } } });\n`;
    const uploads = [0, 1, 2].map((tag) =>
      api(server.url, "lab-key").request("POST", "/v1/scripts", { name: `t${tag}`, entry: "p.ts", files: { "p.ts": slowTypes(tag) } }),
    );
    const answers = await Promise.all(uploads);
    // Two are checked (on a heavily loaded machine a check may pass its deadline: a 400, not the rule here).
    const refused = answers.filter((a) => a.status === 429);
    expect(
      refused.map((a) => a.body.error.code),
      JSON.stringify(answers.map((a) => a.status)),
    ).toEqual(["TOO_MANY_UPLOADS"]);
  });

  it("stops a replay whose client went away: the sandbox workers go idle", async () => {
    // A tenant with the default CPU budget (30 s): ~110 calls of ~80 ms are some 9 s of work if nobody stops it.
    await upload("acme-key", "slow", burn(80));
    const abandoned = await startReplay("acme-key", "slow", 500);
    expect(abandoned.status).toBe(0);
    // The replay's slot frees once the call in progress ends, long before the whole replay would have.
    await waitUntilFree("acme-key", "slow", 5_000);
    const before = workersCpuMs();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(workersCpuMs() - before).toBeLessThan(500);
  });

  it("keeps a quarantined co-tenant's runs near their usual latency while 20 abandoned replays of spinning hooks come in", async () => {
    await upload("acme-key", "spin", `while (true) {}`);
    // The victim breaks a limit once: from now on it runs on the quarantine worker, where spinning replays land.
    const spun = await runToEnd(server.url, "globex-key", { prompt: "spin" });
    expect(spun.final).toMatchObject({ status: "aborted", errorCode: "SANDBOX_TIMEOUT" });
    await victimRunMs(1); // warm
    const baseline = median(await victimRunMs(5));
    const attack = Array.from({ length: 20 }, () => startReplay("acme-key", "spin", 500));
    const during = median(await victimRunMs(5));
    const answers = await Promise.all(attack);
    expect(answers.every((answer) => answer.status === 0 || answer.status === 429)).toBe(true);
    // Generous: the spinning replays, unchecked, multiply it many times over (20 x 300 ms per hook call).
    expect(during, `baseline ${Math.round(baseline)} ms`).toBeLessThan(3 * baseline + 1500);
  }, 120_000);
});

/** Resolves once a replay of the tenant is in progress: a probe replay (of `name`, over no session) answers 429. */
async function waitUntilBusy(key: string, name: string): Promise<void> {
  await waitUntilAnswer(key, name, 429, 10_000);
}

/** Resolves once the tenant has no replay in progress: a probe replay answers 200. */
async function waitUntilFree(key: string, name: string, timeoutMs: number): Promise<void> {
  await waitUntilAnswer(key, name, 200, timeoutMs);
}

async function waitUntilAnswer(key: string, name: string, status: number, timeoutMs: number): Promise<void> {
  let last = 0;
  const probe = async () => {
    last = (await api(server.url, key).request("POST", "/v1/replays", { scripts: [{ name, version: 1 }], sessionIds: [] })).status;
  };
  await probe();
  const deadline = Date.now() + timeoutMs;
  while (last !== status) {
    if (Date.now() > deadline) throw new Error(`replay probe answered ${last}, not ${status}, for ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await probe();
  }
}
