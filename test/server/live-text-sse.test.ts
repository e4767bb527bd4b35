import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { writeFixture } from "./fixture.js";
import { startOpenAIServer } from "../helpers/openai-server.js";

const ANSWER = "Streaming text arrives piece by piece.";
let server: ServeProcess;
let model: Awaited<ReturnType<typeof startOpenAIServer>>;
let release!: () => void;

beforeAll(async () => {
  const until = new Promise<void>((resolve) => (release = resolve));
  model = await startOpenAIServer([{ text: ANSWER, hold: { afterPieces: 2, until } }]);
  const modelFields = { model: "openai-compatible:gpt-test", baseUrl: model.url, apiKeyEnv: "MODEL_KEY", stream: true };
  const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: [], extra: modelFields }]);
  server = await startServe({ config: fixture.config, store: fixture.store, env: { MODEL_KEY: "sk-test" } });
});
afterAll(async () => {
  await server?.stop();
  await model?.close();
});

describe("live text over SSE (a tenant with stream: true)", () => {
  it("sends text-delta messages without an id while the model answers; a reconnect gets stored events only", async () => {
    const acme = api(server.url, "acme-key");
    const { sessionId } = (await acme.request("POST", "/v1/sessions", {})).body;
    const { runId } = (await acme.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "hi" })).body;
    let sawBeforeRelease: string[] | undefined;
    const { messages } = await readEvents(server.url, "acme-key", runId, {
      onMessage: (message) => {
        if (message.event.type !== ("text-delta" as string) || sawBeforeRelease) return;
        sawBeforeRelease = [];
        release();
      },
    });
    expect(sawBeforeRelease).toBeDefined();
    const deltas = messages.filter((m) => (m.event.type as string) === "text-delta");
    expect(deltas.length).toBeGreaterThan(1);
    for (const delta of deltas) expect(delta.id).toBeUndefined();
    expect(deltas.map((m) => (m.event as unknown as { delta: string }).delta).join("")).toBe(ANSWER);
    const stored = messages.filter((m) => (m.event.type as string) !== "text-delta");
    expect(stored.map((m) => m.id)).toEqual(stored.map((_, i) => String(i + 1)));
    expect(stored.find((m) => m.event.type === "inference-finished")?.event).toMatchObject({ text: ANSWER });
    // After the run, its stream holds exactly what the store holds: no deltas.
    const again = await readEvents(server.url, "acme-key", runId, { lastEventId: "0" });
    expect(again.messages.map((m) => m.event.type)).toEqual(stored.map((m) => m.event.type));
  });
});
