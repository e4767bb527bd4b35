import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CDPSession } from "playwright-core";
import { writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { launchBrowser, type Browser } from "./browser.js";

/*
 * A run of over a thousand stored events opened in the inspector, in Debian's Chromium against a real
 * `hookbox serve`: every event is on the page once, in seq order, and the page prints how long it took
 * (navigation start to the last entry on screen) and how smoothly the timeline scrolls. The figures go to
 * BENCHMARKS.md; the assertions here are about what is shown, never about time (the machine is shared).
 */

const CALLS_PER_STEP = 4;
// Each step: inference-started and -finished, and per call a hook decision, tool-started and tool-finished.
const TOOL_STEPS = 72;
const steps = [
  ...Array.from({ length: TOOL_STEPS }, (_, step) => ({
    toolCalls: Array.from({ length: CALLS_PER_STEP }, (_, call) => ({
      id: `s${step}c${call}`,
      name: "record",
      args: { id: `step ${step} call ${call}` },
    })),
  })),
  { text: "a thousand events later" },
];

/** What the timing probe leaves on the page's window (the test's types have no DOM lib). */
interface Probe {
  __renderedAtMs?: number;
  __scroll?: { frames: number; p95Ms: number; maxMs: number };
}

/** The renderer's cumulative main-thread durations, in ms (Chrome DevTools Protocol, Performance domain). */
async function mainThreadMs(devtools: CDPSession): Promise<Record<string, number>> {
  const { metrics } = await devtools.send("Performance.getMetrics");
  const wanted = ["TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration"];
  return Object.fromEntries(metrics.filter((metric) => wanted.includes(metric.name)).map((metric) => [metric.name, metric.value * 1000]));
}

let server: ServeProcess;
let browser: Browser;

beforeAll(async () => {
  const fixture = writeFixture([{ name: "long", key: "long-key", steps, limits: { maxIterations: TOOL_STEPS + 5 } }]);
  server = await startServe({ config: fixture.config, store: fixture.store });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("a long run in the inspector", () => {
  it("renders every event of a 1,000-event run once, in order, and prints the time it took", { timeout: 180_000 }, async () => {
    const long = api(server.url, "long-key");
    const { sessionId } = (await long.request("POST", "/v1/sessions", {})).body;
    const { runId } = (await long.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "do it all" })).body;
    const { messages } = await readEvents(server.url, "long-key", runId);
    const count = messages.length;
    expect(count).toBeGreaterThanOrEqual(1000);
    expect(messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });

    const page = await browser.newPage();
    // Installed before the app loads: notes the time the last entry is on the page (one check per frame).
    await page.addInitScript((expected: number) => {
      const window = globalThis as unknown as Probe & {
        document: { querySelectorAll(selector: string): { length: number } };
        performance: { now(): number };
        requestAnimationFrame(callback: () => void): number;
      };
      const check = () => {
        if (window.document.querySelectorAll(".timeline .entry[data-seq]").length >= expected)
          window.__renderedAtMs = window.performance.now();
        else window.requestAnimationFrame(check);
      };
      window.requestAnimationFrame(check);
    }, count);
    await page.goto(`${server.url}/ui/`);
    await page.getByLabel("API key").fill("long-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    // Opened fresh (a reload), as a user following a link to the run would.
    await page.evaluate(
      (hash: string) => ((globalThis as unknown as { location: { hash: string } }).location.hash = hash),
      `#/runs/${runId}`,
    );
    // The renderer's main-thread time (tasks, script, layout, style) is counted too: unlike the wall-clock
    // figure it barely moves with the machine's load.
    const devtools = await page.context().newCDPSession(page);
    await devtools.send("Performance.enable");
    const before = await mainThreadMs(devtools);
    await page.reload();
    await page.waitForFunction(() => (globalThis as unknown as Probe).__renderedAtMs !== undefined, undefined, { timeout: 120_000 });
    const renderedMs = await page.evaluate(() => (globalThis as unknown as Probe).__renderedAtMs!);
    const after = await mainThreadMs(devtools);
    const busy = Object.fromEntries(Object.entries(after).map(([name, ms]) => [name, ms - before[name]!]));
    const seqs = await page
      .locator(".timeline .entry[data-seq]")
      .evaluateAll((items) => items.map((item) => Number((item as unknown as { dataset: Record<string, string> }).dataset.seq)));
    expect(seqs).toEqual(messages.map((message) => message.event.seq));

    const beforeScroll = await mainThreadMs(devtools);
    // Scrolls the whole timeline, 600 px a frame, and keeps the frames' intervals.
    await page.evaluate(
      () =>
        new Promise<void>((resolve) => {
          const window = globalThis as unknown as Probe & {
            scrollBy(x: number, y: number): void;
            scrollY: number;
            innerHeight: number;
            document: { documentElement: { scrollHeight: number } };
            performance: { now(): number };
            requestAnimationFrame(callback: () => void): number;
          };
          const intervals: number[] = [];
          let last = window.performance.now();
          const frame = () => {
            const now = window.performance.now();
            intervals.push(now - last);
            last = now;
            if (window.scrollY + window.innerHeight >= window.document.documentElement.scrollHeight - 1) {
              intervals.sort((a, b) => a - b);
              window.__scroll = {
                frames: intervals.length,
                p95Ms: intervals[Math.floor(intervals.length * 0.95)]!,
                maxMs: intervals.at(-1)!,
              };
              return resolve();
            }
            window.scrollBy(0, 600);
            window.requestAnimationFrame(frame);
          };
          window.requestAnimationFrame(frame);
        }),
    );
    const scroll = await page.evaluate(() => (globalThis as unknown as Probe).__scroll!);
    const scrollBusyMs = (await mainThreadMs(devtools)).TaskDuration! - beforeScroll.TaskDuration!;
    expect(scroll.frames).toBeGreaterThan(10);
    console.log(
      `inspector: ${count} events rendered ${renderedMs.toFixed(0)} ms after navigation start ` +
        `(main thread busy ${busy.TaskDuration!.toFixed(0)} ms: script ${busy.ScriptDuration!.toFixed(0)}, ` +
        `layout ${busy.LayoutDuration!.toFixed(0)}, style ${busy.RecalcStyleDuration!.toFixed(0)}); ` +
        `scrolling ${scroll.frames} frames: p95 ${scroll.p95Ms.toFixed(1)} ms, max ${scroll.maxMs.toFixed(1)} ms a frame ` +
        `(main thread busy ${(scrollBusyMs / scroll.frames).toFixed(1)} ms a frame)`,
    );
    await page.close();
  });
});
