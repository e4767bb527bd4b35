import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { launchBrowser, pageRecordingViolations, signIn, type Browser, type InPage } from "./browser.js";

/*
 * What the inspector shows of a run besides its calls and decisions, in Debian's Chromium against a real
 * `hookbox serve`: a model call retried, a tool call retried, context restarts (applied and refused), the
 * capability calls of a script (ctx.fetch answered and refused, ctx.kv, the guard model) and its console lines;
 * and the sessions list with each session's own status. Every piece of text here that a model, a script or a
 * provider wrote carries markup that would set a global if it ran: it must show as text and run nothing.
 */

const pwn = (where: string) => `<img src=x onerror="globalThis.__pwned='${where}'">`;
const RETRY_MESSAGE = `overloaded ${pwn("retry")}`;
const KV_KEY = `seen ${pwn("kv")}`;
const RESTART_SUFFIX = "notes";
const HOSTILE_RESTART = `notes${pwn("restart")}`;
const GUARD_TEXT = `<script>globalThis.__pwned='guard'</script>OK`;
const TOOL_ERROR = `gateway <b onmouseover="globalThis.__pwned='tool'">down</b>`;

let partner: Server;
let partnerUrl: string;
let model: Awaited<ReturnType<typeof startOpenAIServer>>;
let server: ServeProcess;
let browser: Browser;

const policy = () => `import { defineScript } from "hookbox";
export default defineScript({
  name: "probe",
  hooks: {
    async beforeToolCall(p) {
      if (p.call.name !== "flaky") return;
      console.log(${JSON.stringify(`checking ${pwn("log")}`)} + " " + p.call.name);
      await p.kv.set(${JSON.stringify(KV_KEY)}, 1);
      await p.kv.get(${JSON.stringify(KV_KEY)});
      const answer = await p.fetch(${JSON.stringify(`${partnerUrl}/check`)});
      console.warn("partner said " + answer.body);
      try {
        await p.fetch("https://elsewhere.example/steal");
      } catch (error) {
        console.error("refused: " + error.code);
      }
      const guard = await p.model.generate({ prompt: "Is this call fine?" });
      console.info("guard: " + guard.text);
    },
    onToolError(p) {
      if (p.call.name === "flaky" && p.attempt === 1) return { action: "retry", backoffMs: 1 };
    },
  },
  tools: [
    {
      name: "remember",
      description: "Restart the context with a note",
      parameters: { type: "object", properties: {} },
      async handler() {
        return { type: ${JSON.stringify(`context_restart_${RESTART_SUFFIX}`)}, enhanced_context_item: { note: ${JSON.stringify(GUARD_TEXT)} } };
      },
    },
    {
      name: "muddle",
      description: "Ask for a restart of a type no restart has",
      parameters: { type: "object", properties: {} },
      async handler() {
        return { type: ${JSON.stringify(`context_restart_${HOSTILE_RESTART}`)} };
      },
    },
    {
      name: "flaky",
      description: "Fails on its first attempt of a run",
      parameters: { type: "object", properties: {} },
      async handler(args, ctx) {
        const attempts = await ctx.kv.incr("flaky attempts");
        if (attempts === 1) throw new Error(${JSON.stringify(TOOL_ERROR)});
        return { ok: true, attempts };
      },
    },
  ],
});
`;

beforeAll(async () => {
  partner = createServer((_request, response) => response.end(`fine ${pwn("fetch")}`));
  await new Promise<void>((resolve) => partner.listen(0, "127.0.0.1", resolve));
  partnerUrl = `http://127.0.0.1:${(partner.address() as AddressInfo).port}`;
  model = await startOpenAIServer(
    [
      { status: 500, errorMessage: RETRY_MESSAGE, headers: { "retry-after-ms": "10" } },
      {
        toolCalls: [
          { id: "c1", name: "remember", args: {} },
          { id: "c2", name: "remember", args: {} },
          { id: "c5", name: "muddle", args: {} },
        ],
      },
      { toolCalls: [{ id: "c3", name: "flaky", args: {} }] },
      { text: "all checked" },
    ],
    { afterReplies: { text: "nothing more" } },
  );
  const fixture = writeFixture([
    {
      name: "acme",
      key: "acme-key",
      steps: [],
      scripts: { "probe.ts": policy() },
      extra: {
        model: "openai-compatible:gpt-test",
        baseUrl: model.url,
        apiKeyEnv: "MODEL_KEY",
        egress: [{ url: `${partnerUrl}/`, allowPrivate: true }],
        guardModel: "scripted:guard.json",
      },
    },
    { name: "steps", key: "steps-key", steps: [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }] },
  ]);
  writeFileSync(join(fixture.dir, "guard.json"), JSON.stringify({ steps: [{ text: GUARD_TEXT }] }));
  server = await startServe({ config: fixture.config, store: fixture.store, env: { MODEL_KEY: "sk-test" } });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
  await new Promise((resolve) => partner?.close(resolve));
});

/** A signed-in page that records CSP violations. */
async function signedIn(key: string): Promise<Page & { violations: string[] }> {
  const page = await pageRecordingViolations(browser);
  await page.goto(`${server.url}/ui/`);
  await signIn(page, key);
  return page;
}

/** The text of each timeline entry of a kind, in order. */
const entries = (page: Page, type: string) => page.locator(`.timeline .entry[data-type="${type}"] .text`).allTextContents();

describe("the inspector's run timeline shows retries, restarts, capability calls and logs as text", () => {
  it("renders each with what it is about, filterable and expandable, and runs none of their markup", { timeout: 120_000 }, async () => {
    const acme = api(server.url, "acme-key");
    const { sessionId } = (await acme.request("POST", "/v1/sessions", {})).body;
    const { runId } = (await acme.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "check it all" })).body;
    const { messages } = await readEvents(server.url, "acme-key", runId);
    const stored = messages.map((m) => m.event);
    expect(stored.at(-1), JSON.stringify(stored, null, 1)).toMatchObject({
      type: "run-finished",
      status: "completed",
      text: "all checked",
    });

    const page = await signedIn("acme-key");
    await page.goto(`${server.url}/ui/#/runs/${runId}`);
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    // Every stored event is on the page once, in order.
    const seqs = await page
      .locator(".timeline .entry[data-seq]")
      .evaluateAll((items) => items.map((item) => item.getAttribute("data-seq")));
    expect(seqs).toEqual(stored.map((event) => String(event.seq)));

    // The model call that failed and was retried: the attempt, the wait, the provider's status and message.
    expect(await entries(page, "inference-retry")).toEqual([`attempt 2 in 10 ms after 500: ${RETRY_MESSAGE}`]);
    // Two restarts of one kind in a run: the first applied, the second refused (already applied); a type no restart
    // can have (the script's markup in it) refused too, and shown as text.
    expect(await entries(page, "context-restart")).toEqual([
      `${RESTART_SUFFIX} applied`,
      `${RESTART_SUFFIX} refused`,
      `${HOSTILE_RESTART} refused`,
    ]);
    // The failed tool attempt with its error, the retry granted, and the attempt that worked.
    const toolFinished = await entries(page, "tool-finished");
    expect(toolFinished.filter((text) => text.startsWith("flaky"))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^flaky in \\d+ ms: error SCRIPT_ERROR probe: tool flaky threw Error: ${escape(TOOL_ERROR)} \\(at probe\\.ts:\\d+:\\d+\\)$`,
        ),
      ),
      expect.stringMatching(/^flaky in \d+ ms: result \{"ok":true,"attempts":2\}$/),
    ]);
    expect(await entries(page, "tool-retry")).toEqual(["call c3: attempt 2 after 1 ms"]);
    // The script's capability calls, answered and refused, named with the script.
    expect(await entries(page, "capability")).toEqual([
      `kv set ${KV_KEY} ok (probe)`,
      `kv get ${KV_KEY} ok (probe)`,
      `fetch GET ${partnerUrl}/check ok (probe)`,
      "fetch GET https://elsewhere.example/steal refused CAPABILITY_DENIED (probe)",
      "model scripted ok (probe)",
      // The tool's own kv use, once per attempt.
      "kv incr flaky attempts ok (probe)",
      "kv incr flaky attempts ok (probe)",
    ]);
    // Its console lines, at their levels, with what the partner and the guard model answered.
    expect(await entries(page, "log")).toEqual([
      `probe info: checking ${pwn("log")} flaky`,
      `probe warn: partner said fine ${pwn("fetch")}`,
      "probe error: refused: CAPABILITY_DENIED",
      `probe info: guard: ${GUARD_TEXT}`,
    ]);

    // Each kind can be hidden, and each entry opens to its JSON.
    await page.getByText(/Filter by kind/).click();
    for (const kind of ["inference-retry", "context-restart", "capability", "log", "tool-retry"]) {
      await page.getByRole("checkbox", { name: kind, exact: true }).uncheck();
      await expect.poll(() => page.locator(`.timeline .entry[data-type="${kind}"]`).count(), { message: kind }).toBe(0);
      await page.getByRole("checkbox", { name: kind, exact: true }).check();
    }
    const retry = page.locator('.entry[data-type="inference-retry"]');
    await retry.getByRole("button", { name: "JSON" }).click();
    expect(JSON.parse((await retry.locator("pre").textContent())!)).toMatchObject({
      type: "inference-retry",
      attempt: 2,
      status: 500,
      message: RETRY_MESSAGE,
    });
    const refused = page.locator('.entry[data-type="capability"]', { hasText: "refused" });
    await refused.getByRole("button", { name: "JSON" }).click();
    expect(JSON.parse((await refused.locator("pre").textContent())!)).toMatchObject({
      kind: "fetch",
      ok: false,
      errorCode: "CAPABILITY_DENIED",
      script: "probe",
    });

    expect(await page.evaluate(() => (globalThis as unknown as InPage).__pwned)).toBeUndefined();
    expect(await page.locator(".timeline img, .timeline script, .timeline b").count()).toBe(0);
    expect(page.violations).toEqual([]);
    await page.close();
  });
});

describe("the inspector's sessions list", () => {
  it("shows each session's own status (idle, running) beside its last run's", { timeout: 60_000 }, async () => {
    const client = api(server.url, "steps-key");
    const idle = (await client.request("POST", "/v1/sessions", {})).body.sessionId as string;
    const busy = (await client.request("POST", "/v1/sessions", {})).body.sessionId as string;
    const { runId } = (await client.request("POST", `/v1/sessions/${busy}/runs`, { prompt: "step through", step: true })).body;
    const { messages } = await readEvents(server.url, "steps-key", runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
    const pause = messages.at(-1)!;

    const page = await signedIn("steps-key");
    const row = (sessionId: string) => page.locator("table.list tbody tr", { has: page.locator(`a[title="${sessionId}"]`) });
    const cells = async (sessionId: string) => {
      const texts = await row(sessionId).locator("td").allTextContents();
      return { status: texts[1], lastRun: texts[4] };
    };
    await row(busy).waitFor();
    expect(await cells(idle)).toEqual({ status: "idle", lastRun: "none" });
    expect(await cells(busy)).toEqual({ status: "running", lastRun: "step through (running)" });

    // The run ends: the session is idle again (ready for its next run), its last run completed.
    // Step mode pauses after each inference and after the tools: continue each pause until the run ends.
    for (let open: typeof pause | undefined = pause; open;) {
      await client.request("POST", `/v1/runs/${runId}/continue`, { pauseId: (open.event as { pauseId: string }).pauseId });
      const next = await readEvents(server.url, "steps-key", runId, {
        lastEventId: open.id,
        stopWhen: (m) => m.event.type === "debugger.pause",
      });
      open = next.messages.at(-1)?.event.type === "debugger.pause" ? next.messages.at(-1) : undefined;
    }
    await page.reload();
    await row(busy).waitFor();
    expect(await cells(busy)).toEqual({ status: "idle", lastRun: "step through (completed)" });
    await page.close();
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
