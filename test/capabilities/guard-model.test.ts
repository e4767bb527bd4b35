import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";
import { startOpenAIServer } from "../helpers/openai-server.js";

/*
 * ctx.model.generate through the real CLI: the guard is a real OpenAI-compatible server on loopback (the
 * same engine code as the run's own model), its tokens show in the capability event and the run's usage;
 * without --guard-model the call is denied.
 */

const guard = `import { defineScript } from "hookbox";
export default defineScript({
  name: "guarded",
  hooks: {
    async beforeToolCall(p) {
      try {
        const answer = await p.model.generate({
          messages: [{ role: "system", content: "Answer ABUSIVE or OK." }],
          prompt: JSON.stringify(p.call.args),
          maxTokens: 5,
        });
        console.log(JSON.stringify(answer));
        return answer.text.startsWith("ABUSIVE") ? { action: "deny", reason: answer.text } : undefined;
      } catch (e) {
        console.log(JSON.stringify({ code: (e as any).code, message: (e as Error).message }));
        return undefined;
      }
    },
  },
});
`;

let server: Awaited<ReturnType<typeof startOpenAIServer>>;
let dir: string;
beforeAll(async () => {
  server = await startOpenAIServer([{ text: "ABUSIVE: too many refunds" }]);
  dir = tmp("hookbox-guard-");
  writeFileSync(join(dir, "guard.ts"), guard);
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "refund", args: { customer: "bo", amount: 900 } }] }, { text: "done" }] }),
  );
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "refund", description: "r", parameters: { type: "object" }, handler: async () => ({ refunded: true }) }];`,
  );
});
afterAll(() => server.close());

const baseArgs = () => [
  "run",
  join(dir, "guard.ts"),
  "--prompt",
  "refund bo",
  "--model",
  `scripted:${join(dir, "model.json")}`,
  "--host-tools",
  join(dir, "tools.mjs"),
  "--json",
];

describe("ctx.model.generate", () => {
  it("calls the granted guard model through the engine; its tokens show in the capability event", async () => {
    const result = await runCli([...baseArgs(), "--guard-model", "openai-compatible:guard-1", "--base-url", server.url]);
    expect(result.code, result.stderr).toBe(0);
    const events = jsonLines(result.stdout);
    expect(JSON.parse(events.find((e) => e.type === "log").message)).toEqual({
      text: "ABUSIVE: too many refunds",
      usage: { inputTokens: 11, outputTokens: 7 },
    });
    expect(events.find((e) => e.type === "capability")).toMatchObject({
      kind: "model",
      ok: true,
      script: "guarded",
      model: "guard-1",
      usage: { inputTokens: 11, outputTokens: 7 },
    });
    expect(events.find((e) => e.type === "hook-decision" && e.script === "guarded").decision).toMatchObject({ action: "deny" });
    // What the guard received: the script's messages, its prompt last, its token bound, no tools.
    const request = server.requests.at(-1);
    expect(request.model).toBe("guard-1");
    expect(request.messages).toEqual([
      { role: "system", content: "Answer ABUSIVE or OK." },
      { role: "user", content: JSON.stringify({ customer: "bo", amount: 900 }) },
    ]);
    expect(request.max_tokens).toBe(5);
    expect(request.tools).toBeUndefined();
  });

  it("without a grant it is denied, and the run goes on", async () => {
    const result = await runCli(baseArgs());
    expect(result.code).toBe(0);
    const events = jsonLines(result.stdout);
    const outcome = JSON.parse(events.find((e) => e.type === "log").message);
    expect(outcome.code).toBe("CAPABILITY_DENIED");
    expect(outcome.message).toContain("ctx.model.generate: tenant default has no guardModel granted");
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ result: { refunded: true } });
  });
});
