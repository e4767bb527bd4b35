import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { launchBrowser, type Browser } from "./browser.js";

/*
 * The inspector's policy view in Debian's Chromium against a real `hookbox serve`: script versions with their
 * source (hostile text in it shown as text), the deployment history with the current and shadow scripts, the
 * shadow report, and a replay whose changed decision links to its call in the run's timeline.
 */

const HOSTILE_COMMENT = `// <img src=x onerror="globalThis.__pwned='source'"> <script>globalThis.__pwned='source'</script>`;
const policy = (deny: boolean, name = "policy") => `import { defineScript } from "hookbox";
${HOSTILE_COMMENT}
export default defineScript({
  name: "${name}",
  hooks: {
    beforeToolCall(p) {
      ${deny ? `if (p.call.id === "c2") return { action: "deny", reason: "c2 is not allowed" };` : ""}
    },
  },
});
`;

let server: ServeProcess;
let browser: Browser;
const acme = () => api(server.url, "acme-key");

beforeAll(async () => {
  const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
  server = await startServe({ config: fixture.config, store: fixture.store });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("the inspector's policy view", () => {
  it(
    "shows versions with their source, the deployment history, the shadow report and a replay's changes linked to their calls",
    { timeout: 180_000 },
    async () => {
      for (const [name, deny] of [
        ["policy", false],
        ["policy", true],
        ["strict", true],
      ] as const) {
        const uploaded = await acme().request("POST", "/v1/scripts", {
          name,
          entry: "policy.ts",
          files: { "policy.ts": policy(deny, name) },
        });
        expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
      }
      const deployed = await acme().request("PUT", "/v1/deployment", {
        scripts: [{ name: "policy", version: 1 }],
        shadow: [{ name: "strict", version: 1 }],
      });
      expect(deployed.status).toBe(200);
      const { sessionId } = (await acme().request("POST", "/v1/sessions", {})).body;
      const { runId } = (await acme().request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both" })).body;
      const { messages } = await readEvents(server.url, "acme-key", runId);
      expect(messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });

      const page = await browser.newPage();
      await page.goto(`${server.url}/ui/`);
      await page.getByLabel("API key").fill("acme-key");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Policies" }).click();

      // Versions, newest first, each with its source on demand.
      const script = page.getByRole("article", { name: "Script policy" });
      await expect
        .poll(() => script.locator("details.version summary").allTextContents())
        .toEqual([expect.stringMatching(/^v2 · policy\.ts/), expect.stringMatching(/^v1 · policy\.ts/)]);
      await script.locator("details.version summary", { hasText: "v2" }).click();
      const source = page.getByLabel("policy v2 policy.ts");
      await expect.poll(() => source.textContent()).toBe(policy(true));
      expect(await source.textContent()).toContain(HOSTILE_COMMENT);

      // The history, latest first, with the current deployment and its shadow.
      const history = page.getByRole("table", { name: "Deployment history" });
      const rows = history.locator("tbody tr");
      await expect.poll(() => rows.count()).toBe(2);
      expect(await rows.nth(0).locator("td").allTextContents()).toEqual([
        "2 (current)",
        "policy v1",
        "strict v1",
        expect.any(String),
        "Shadow report 2",
      ]);
      expect(await rows.nth(1).locator("td").first().textContent()).toBe("1");
      expect(await rows.nth(1).locator("td").nth(1).textContent()).toBe("the config's scripts");
      expect(await page.locator(".current-deployment").textContent()).toBe("Current: deployment 2, scripts policy v1, shadow strict v1");

      // The shadow report: the shadow would have denied c2.
      await history.getByRole("button", { name: "Shadow report 2" }).click();
      const report = page.getByRole("region", { name: "Shadow report of deployment 2" });
      await expect.poll(() => report.locator("p").textContent()).toMatch(/^1 runs, \d+ calls: \d+ agreed, 1 proceed->deny$/);
      expect(await report.locator("tbody tr").first().locator("td").allTextContents()).toEqual(["c2", "beforeToolCall", "proceed", "deny"]);
      expect(await report.getByRole("link", { name: "c2" }).getAttribute("href")).toBe(`#/runs/${runId}?call=c2`);

      // A replay of policy v2 over the recorded run: c2's decision changes, and its link opens the call in the run.
      await page.getByLabel("policy version").selectOption("2");
      await page.getByRole("button", { name: "Replay" }).click();
      const changes = page.getByRole("table", { name: "Changed decisions" });
      await expect.poll(() => changes.locator("tbody tr").count()).toBe(1);
      const change = changes.locator("tbody tr").first();
      expect((await change.locator("td").allTextContents()).slice(1, 4)).toEqual(["beforeToolCall", "proceed", "deny"]);
      expect(await change.locator("td").nth(4).textContent()).toContain("c2 is not allowed");
      await change.getByRole("link").click();
      await page.waitForURL(new RegExp(`#/runs/${runId}\\?call=c2$`));
      const marked = page.locator('.timeline .entry[aria-current="true"]');
      await expect.poll(() => marked.count()).toBeGreaterThan(0);
      expect(
        new Set(
          await marked.evaluateAll((items) => items.map((item) => (item as unknown as { dataset: Record<string, string> }).dataset.callId)),
        ),
      ).toEqual(new Set(["c2"]));

      // The call's hook decisions name their script and version; the shadow's is marked and enforced nothing.
      const decisions = await marked.and(page.locator('[data-type="hook-decision"]')).locator(".text").allTextContents();
      expect(decisions).toContain("beforeToolCall · policy v1 · none");
      expect(decisions).toContain("beforeToolCall · strict v1 · deny: c2 is not allowed (shadow)");
      expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
      await page.close();
    },
  );
});
