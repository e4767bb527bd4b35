import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { launchBrowser, pageRecordingViolations, signIn, type Browser, type InPage } from "./browser.js";

/*
 * The web inspector end to end: the real `hookbox serve` child process, Debian's Chromium driven by
 * playwright-core, and only what a user does (sign in, click, type). Hostile markup from the model, a tool's
 * arguments and a hook's reason must show as text and run nothing: every page counts CSP violations and
 * watches a global flag the markup would set.
 */

const HOSTILE_ARG = `<img src=x onerror="window.__pwned='args'">`;
const HOSTILE_REASON = `refund <img src=x onerror="window.__pwned='reason'"> needs a person`;
const HOSTILE_TEXT = `<script>window.__pwned='text'</script>All <b>done</b>`;
const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) {
    if (p.userContext?.originalUserRequest.includes("ask")) return { action: "ask", reason: ${JSON.stringify(HOSTILE_REASON)} };
  },
} });
`;
const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: HOSTILE_ARG, delayMs: 0 } }] }, { text: HOSTILE_TEXT }];
const STREAMED = "Streaming answer, written piece by piece for the page.";

let server: ServeProcess;
let browser: Browser;
let model: Awaited<ReturnType<typeof startOpenAIServer>>;
let releaseModel!: () => void;
const keysSeenInUrls: string[] = [];

beforeAll(async () => {
  const until = new Promise<void>((resolve) => (releaseModel = resolve));
  model = await startOpenAIServer([{ text: STREAMED, hold: { afterPieces: 3, until } }]);
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps, scripts: { "policy.ts": policy } },
    { name: "globex", key: "globex-key", steps },
    {
      name: "streamer",
      key: "stream-key",
      steps: [],
      extra: { model: "openai-compatible:gpt-test", baseUrl: model.url, apiKeyEnv: "MODEL_KEY", stream: true },
    },
  ]);
  server = await startServe({ config: fixture.config, store: fixture.store, env: { MODEL_KEY: "sk-test" } });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
  // The key is never in a URL the page asked for, nor in anything the server wrote.
  expect(keysSeenInUrls).toEqual([]);
  expect(server.stderr()).not.toContain("acme-key");
});

interface InPageElement {
  dataset: Record<string, string | undefined>;
}

/** A page that records CSP violations and every request URL, signed in with `key`. */
async function openInspector(key?: string): Promise<Page & { violations: string[] }> {
  const page = await pageRecordingViolations(browser);
  page.on("request", (request) => {
    for (const secret of ["acme-key", "globex-key", "stream-key"]) if (request.url().includes(secret)) keysSeenInUrls.push(request.url());
  });
  await page.goto(`${server.url}/ui/`);
  if (key) await signIn(page, key);
  return page;
}

async function expectNothingRan(page: Page & { violations: string[] }) {
  expect(await page.evaluate(() => (globalThis as unknown as InPage).__pwned)).toBeUndefined();
  expect(page.violations).toEqual([]);
}

/** Starts a run from a new session's prompt box and lands on the run's page; returns the run id. */
async function startRun(page: Page, prompt: string, options: { step?: boolean } = {}): Promise<string> {
  await nav(page, "Sessions");
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByLabel("Prompt").fill(prompt);
  if (options.step) await page.getByLabel("Step").check();
  await page.getByRole("button", { name: "Start run" }).click();
  await page.waitForURL(/#\/runs\/run_/);
  return decodeURIComponent(/#\/runs\/([^?]+)/.exec(page.url())![1]);
}

const nav = (page: Page, where: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: where }).click();
const timelineTypes = (page: Page) =>
  page.locator(".timeline .entry[data-seq]").evaluateAll((items) => items.map((item) => (item as unknown as InPageElement).dataset.type));
const timelineSeqs = (page: Page) =>
  page
    .locator(".timeline .entry[data-seq]")
    .evaluateAll((items) => items.map((item) => Number((item as unknown as InPageElement).dataset.seq)));

describe("the web inspector at /ui/", () => {
  it("is served with a Content-Security-Policy that allows no inline script and no other origin", async () => {
    const response = await fetch(`${server.url}/ui/`);
    expect(response.status).toBe(200);
    const csp = response.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    const html = await response.text();
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script: only src=
    expect((await fetch(`${server.url}/ui/app.js`)).headers.get("content-type")).toMatch(/javascript/);
    expect((await fetch(`${server.url}/ui/../package.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/ui/secret.txt`)).status).toBe(404);
  });

  it("refuses a wrong key with a clear message and keeps the key out of the page's address", async () => {
    const page = await openInspector();
    await page.getByLabel("API key").fill("not-a-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("refused this API key");
    await signIn(page, "acme-key");
    expect(page.url()).not.toContain("acme-key");
    expect(await page.evaluate(() => sessionStorage.getItem("hookbox.apiKey"))).toBe("acme-key");
    await page.close();
  });

  it("steps a run: the pause appears live, Continue goes on, a reload shows every event once, and the end says so", async () => {
    const page = await openInspector("acme-key");
    const runId = await startRun(page, "record it", { step: true });
    const cont = page.getByRole("button", { name: "Continue" });
    await cont.waitFor();
    await expect.poll(() => timelineTypes(page)).toContain("debugger.pause");
    await cont.click();
    // The second pause (after the tools): reload the page there, mid-run. The tools' hooks are the tenant's first
    // sandboxed calls (a worker may start for them: seconds on a loaded machine), so the wait is bounded generously.
    await expect
      .poll(async () => (await timelineTypes(page)).filter((type) => type === "debugger.pause").length, { timeout: 15_000 })
      .toBe(2);
    await page.reload();
    await page.getByRole("button", { name: "Continue" }).waitFor();
    const seqs = await timelineSeqs(page);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    await page.getByRole("button", { name: "Continue" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    // What the run spent, as its budgets count it.
    expect(await page.getByRole("status").textContent()).toMatch(/spent \d+ in \/ \d+ out tokens/);
    const after = await timelineSeqs(page);
    expect(after).toEqual(after.map((_, i) => i + 1));
    const stored = await readEvents(server.url, "acme-key", runId);
    expect(after.length).toBe(stored.messages.length);
    // The model's markup and the tool's arguments are shown as text.
    await expect.poll(() => page.locator(".timeline").textContent()).toContain(HOSTILE_TEXT);
    await expect
      .poll(() => page.locator(".timeline").textContent())
      .toContain(JSON.stringify(HOSTILE_ARG).slice(1, -1).replace(/\\"/g, '\\"'));
    await expectNothingRan(page);
    await page.close();
  });

  it("filters the timeline by kind and expands an entry to its JSON", async () => {
    const page = await openInspector("acme-key");
    const runId = await startRun(page, "record it");
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    await page.getByText(/Filter by kind/).click();
    await page.getByRole("checkbox", { name: "tool-started" }).uncheck();
    await expect.poll(() => timelineTypes(page)).not.toContain("tool-started");
    expect(await timelineTypes(page)).toContain("tool-finished");
    const finished = page.locator('.entry[data-type="run-finished"]');
    await finished.getByRole("button", { name: "JSON" }).click();
    const json = JSON.parse((await finished.locator("pre").textContent())!);
    expect(json).toMatchObject({ type: "run-finished", status: "completed", text: HOSTILE_TEXT });
    expect(runId).toMatch(/^run_/);
    await page.close();
  });

  it("answers approvals from the run: Edit arguments (a refusal shown next to the field), Approve, Reject", async () => {
    const page = await openInspector("acme-key");
    await startRun(page, "please ask");
    const card = page.getByRole("article", { name: "Approval for record" });
    await card.waitFor();
    expect(await card.locator(".reason").textContent()).toBe(HOSTILE_REASON);
    // docs/inspector-run.png is this page: HOOKBOX_UI_SCREENSHOT=docs/inspector-run.png npx vitest run test/ui/inspector.test.ts
    if (process.env.HOOKBOX_UI_SCREENSHOT) await page.screenshot({ path: process.env.HOOKBOX_UI_SCREENSHOT });
    // The hook's decision names its script and shows its reason, as text.
    const decision = page.locator('.entry[data-type="hook-decision"]', { hasText: "policy" });
    expect(await decision.locator(".text").textContent()).toBe(`beforeToolCall · policy · ask: ${HOSTILE_REASON}`);
    expect(JSON.parse((await card.getByLabel("Arguments").textContent())!)).toEqual({ id: HOSTILE_ARG, delayMs: 0 });
    await card.getByRole("button", { name: "Edit arguments" }).click();
    await card.getByLabel("delayMs").fill('"slow"');
    await card.getByRole("button", { name: "Approve edited" }).click();
    const refusal = card.locator(".field", { has: page.getByLabel("delayMs") }).getByRole("alert");
    await expect.poll(() => refusal.textContent()).toMatch(/number/);
    await card.getByLabel("delayMs").fill("5");
    await card.getByRole("button", { name: "Approve edited" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    const resolved = page.locator('.entry[data-type="approval.resolved"]');
    await expect.poll(() => resolved.textContent()).toContain('"delayMs":5');

    await startRun(page, "ask again");
    await page.getByRole("article", { name: "Approval for record" }).getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    await expect.poll(() => page.locator('.entry[data-type="approval.resolved"]').textContent()).toContain("approved");

    await startRun(page, "ask once more");
    await page.getByRole("article", { name: "Approval for record" }).getByRole("button", { name: "Reject" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    await expect.poll(() => page.locator('.entry[data-type="approval.resolved"]').textContent()).toContain("rejected");
    await expectNothingRan(page);
    await page.close();
  });

  it("answers approvals from the inbox, oldest first with their deadline", async () => {
    const acme = api(server.url, "acme-key");
    const runs: string[] = [];
    for (const prompt of ["ask one", "ask two", "ask three"]) {
      const { sessionId } = (await acme.request("POST", "/v1/sessions", {})).body;
      const { runId } = (await acme.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt })).body;
      await readEvents(server.url, "acme-key", runId, { stopWhen: (m) => m.event.type === "approval.requested" });
      runs.push(runId);
    }
    const page = await openInspector("acme-key");
    await nav(page, "Approvals");
    const cards = page.getByRole("article", { name: "Approval for record" });
    await expect.poll(() => cards.count()).toBe(3);
    expect(
      await page.locator(".inbox > li").evaluateAll((items) => items.map((item) => item.querySelector("a")!.getAttribute("href"))),
    ).toEqual(runs.map((runId) => `#/runs/${runId}?call=c1`));
    expect(await cards.first().textContent()).toMatch(/Deadline.*\(in \d+ min/);
    await cards.first().getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => cards.count()).toBe(2);
    await cards.first().getByRole("button", { name: "Reject" }).click();
    await expect.poll(() => cards.count()).toBe(1);
    await cards.first().getByRole("button", { name: "Edit arguments" }).click();
    await cards.first().getByLabel("delayMs").fill("7");
    await cards.first().getByRole("button", { name: "Approve edited" }).click();
    await expect.poll(() => cards.count()).toBe(0);
    const endings = [];
    for (const runId of runs) {
      const { messages } = await readEvents(server.url, "acme-key", runId);
      endings.push(messages.find((m) => m.event.type === "approval.resolved")!.event);
    }
    expect(endings).toMatchObject([{ decision: "approved" }, { decision: "rejected" }, { decision: "approved", args: { delayMs: 7 } }]);
    await expectNothingRan(page);
    await page.close();
  });

  it("Cancel run ends a paused run", async () => {
    const page = await openInspector("acme-key");
    await startRun(page, "record it", { step: true });
    await page.getByRole("button", { name: "Continue" }).waitFor();
    await page.getByRole("button", { name: "Cancel run" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run cancelled");
    expect(await page.getByRole("button", { name: "Continue" }).count()).toBe(0);
    await page.close();
  });

  it("shows only the signed-in tenant's data", async () => {
    const globex = api(server.url, "globex-key");
    const { sessionId } = (await globex.request("POST", "/v1/sessions", {})).body;
    const { runId } = (await globex.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "globex secret prompt" })).body;
    await readEvents(server.url, "globex-key", runId);
    const page = await openInspector("acme-key");
    await page.getByRole("heading", { name: "Sessions" }).waitFor();
    for (const where of ["Sessions", "Runs", "Approvals"]) {
      await nav(page, where);
      await page.waitForTimeout(300);
      const text = await page.locator("main").textContent();
      expect(text, where).not.toContain("globex secret prompt");
      expect(await page.content(), where).not.toContain(sessionId);
      expect(await page.content(), where).not.toContain(runId);
    }
    await page.goto(`${server.url}/ui/#/runs/${runId}`);
    await expect.poll(() => page.getByRole("alert").first().textContent()).toMatch(/No run|no run/);
    expect(await page.locator("main").textContent()).not.toContain("globex secret prompt");
    await page.close();
  });

  it("streams the model's text while it answers, then shows the finished text", async () => {
    const page = await openInspector("stream-key");
    await startRun(page, "tell me");
    const writing = page.getByRole("listitem", { name: "Model writing" });
    await expect.poll(() => writing.textContent()).toContain(STREAMED.slice(0, 15));
    expect(await page.getByRole("status").count()).toBe(0);
    expect(await timelineTypes(page)).not.toContain("inference-finished");
    releaseModel();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Run completed");
    expect(await writing.count()).toBe(0);
    expect(await page.locator('.entry[data-type="inference-finished"]').textContent()).toContain(STREAMED);
    await page.close();
  });
});
