import { describe, expect, it } from "vitest";
import { createServer } from "node:net";
import { jsonLines, runCli } from "../helpers/cli.js";
import { harness, ofType } from "../helpers/harness.js";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { parseRetryAfter } from "../../src/loop/model-call.js";

/** `hookbox run` against an OpenAI-compatible server (JSON events unless `human`). */
const runAgainst = (url: string, extra: string[] = [], human = false) =>
  runCli([
    "run",
    "--model",
    "openai-compatible:primary-model",
    "--base-url",
    url,
    "--prompt",
    "hello",
    ...(human ? [] : ["--json"]),
    ...extra,
  ]);

/** One retry of the primary, then the fallback on its own server. */
const withFallback = (url: string) => [
  "--model-retries",
  "1",
  "--fallback-model",
  "openai-compatible:backup-model",
  "--fallback-base-url",
  url,
];

/** A loopback port with nothing listening: connecting to it is refused (a network error). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("model calls: retries with backoff, Retry-After, fallback (real CLI, loopback provider)", () => {
  it("a 429 with Retry-After: 1 is retried once after about a second, and the run completes", async () => {
    const provider = await startOpenAIServer([{ status: 429, headers: { "retry-after": "1" } }, { text: "hello back" }]);
    try {
      const r = await runAgainst(provider.url);
      expect(r.code, r.stderr).toBe(0);
      const events = jsonLines(r.stdout);
      const retries = events.filter((e) => e.type === "inference-retry");
      expect(retries).toHaveLength(1);
      expect(retries[0]).toMatchObject({
        iteration: 1,
        attempt: 2,
        delayMs: 1000,
        status: 429,
        model: "openai-compatible.chat:primary-model",
      });
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "hello back" });
      expect(provider.requests).toHaveLength(2);
      const waited = provider.times[1] - provider.times[0];
      expect(waited).toBeGreaterThanOrEqual(950);
      expect(waited).toBeLessThan(5000);
    } finally {
      await provider.close();
    }
  });

  it("when the primary only fails, its retries are spent and the fallback model answers", async () => {
    const primary = await startOpenAIServer([], { afterReplies: { status: 503 } });
    const fallback = await startOpenAIServer([{ text: "fallback here" }]);
    try {
      const r = await runAgainst(primary.url, withFallback(fallback.url));
      expect(r.code, r.stderr).toBe(0);
      const events = jsonLines(r.stdout);
      expect(primary.requests).toHaveLength(2); // the first attempt and one retry
      expect(fallback.requests.map((body) => body.model)).toEqual(["backup-model"]);
      const retries = events.filter((e) => e.type === "inference-retry");
      expect(retries.map((e) => [e.attempt, e.status, e.fallback ?? false])).toEqual([
        [2, 503, false],
        [3, 503, true],
      ]);
      expect(retries[0].delayMs).toBe(500);
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "fallback here" });
    } finally {
      await primary.close();
      await fallback.close();
    }
  });

  it("the human transcript shows each retry, the switch to the fallback and the usage with its cost", async () => {
    const primary = await startOpenAIServer([], { afterReplies: { status: 503 } });
    const fallback = await startOpenAIServer([{ text: "fallback here", usage: { input: 1000, output: 500 } }]);
    try {
      const r = await runAgainst(primary.url, [...withFallback(fallback.url), "--pricing", "*=2,4"], true);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("↻ model 503: retrying openai-compatible.chat:primary-model as attempt 2 in 500 ms");
      expect(r.stdout).toContain("↻ falling back to openai-compatible.chat:backup-model (attempt 3)");
      // 1000 * 2 / 1e6 + 500 * 4 / 1e6 = $0.004
      expect(r.stdout).toContain("usage: 1000 in + 500 out tokens, $0.004");
    } finally {
      await primary.close();
      await fallback.close();
    }
  });

  it("with no fallback, the run fails with MODEL and the provider's status and message", async () => {
    const provider = await startOpenAIServer([], { afterReplies: { status: 500 } });
    try {
      const r = await runAgainst(provider.url, ["--model-retries", "1"]);
      expect(r.code).toBe(1);
      const finished = jsonLines(r.stdout).at(-1);
      expect(finished).toMatchObject({ type: "run-finished", status: "failed", errorCode: "MODEL" });
      expect(finished.reason).toContain("answered 500");
      expect(finished.reason).toContain("fake provider error 500");
      expect(provider.requests).toHaveLength(2);
    } finally {
      await provider.close();
    }
  });

  it("a 400 is not retried: the run fails with MODEL at once", async () => {
    const provider = await startOpenAIServer([{ status: 400 }, { text: "never asked" }]);
    try {
      const r = await runAgainst(provider.url);
      expect(jsonLines(r.stdout).at(-1)).toMatchObject({ status: "failed", errorCode: "MODEL" });
      expect(jsonLines(r.stdout).filter((e) => e.type === "inference-retry")).toHaveLength(0);
      expect(provider.requests).toHaveLength(1);
    } finally {
      await provider.close();
    }
  });

  it("a refused connection is a network error: retried, then MODEL naming it unreachable", async () => {
    const port = await closedPort();
    const r = await runAgainst(`http://127.0.0.1:${port}/v1`, ["--model-retries", "1"]);
    const events = jsonLines(r.stdout);
    const retry = events.find((e) => e.type === "inference-retry");
    expect(retry).toMatchObject({ attempt: 2, delayMs: 500 });
    expect(retry.status).toBeUndefined();
    expect(events.at(-1)).toMatchObject({ status: "failed", errorCode: "MODEL" });
    expect(events.at(-1).reason).toContain("was unreachable");
  });

  it("cancel interrupts a Retry-After wait at once", async () => {
    const provider = await startOpenAIServer([{ status: 429, headers: { "retry-after": "30" } }, { text: "too late" }]);
    try {
      const openai = createOpenAICompatible({ name: "loopback", baseURL: provider.url });
      const h = await harness({ steps: [], extras: { model: openai.chatModel("m") } });
      const handle = h.runtime.start({ sessionId: "s", prompt: "x" });
      const seen: string[] = [];
      const started = Date.now();
      for await (const event of handle.events()) {
        seen.push(event.type);
        if (event.type === "inference-retry") handle.cancel("user gave up");
      }
      const result = await handle.wait();
      expect(result.status).toBe("cancelled");
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(seen).toContain("inference-retry");
      expect(provider.requests).toHaveLength(1);
    } finally {
      await provider.close();
    }
  });

  it("a wait that would pass the run's deadline is not made: the run fails with MODEL before the deadline", async () => {
    const provider = await startOpenAIServer([{ status: 429, headers: { "retry-after": "20" } }, { text: "too late" }]);
    try {
      const openai = createOpenAICompatible({ name: "loopback", baseURL: provider.url });
      const h = await harness({ steps: [], extras: { model: openai.chatModel("m") } });
      const { result, events } = await h.run("x", { deadlineMs: Date.now() + 10_000 });
      expect(result.errorCode).toBe("MODEL");
      expect(ofType(events, "inference-retry")).toHaveLength(0);
    } finally {
      await provider.close();
    }
  });
});

describe("Retry-After parsing", () => {
  const now = Date.parse("2026-11-23T10:00:00Z");
  it.each([
    [{ "retry-after": "2" }, 2000],
    [{ "Retry-After": "0.5" }, 500],
    [{ "retry-after": "Mon, 23 Nov 2026 10:00:03 GMT" }, 3000],
    [{ "retry-after": "Mon, 23 Nov 2026 09:59:00 GMT" }, 0],
    [{ "retry-after-ms": "250", "retry-after": "9" }, 250],
    [{ "retry-after": "soon" }, undefined],
    [{}, undefined],
  ])("%j -> %s ms", (headers, expected) => {
    expect(parseRetryAfter(headers as Record<string, string>, now)).toBe(expected);
  });
});
