import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { SessionManager } from "../../src/session/manager.js";
import { openMemoryStore } from "../../src/store/open.js";
import type { RunOptions, TenantConfig } from "../../src/host/types.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import { api, readEvents, startServe } from "../server/serve-process.js";
import { createHash } from "node:crypto";

/*
 * A run's instructions (`system`), model settings and what the model is shown of the user context, as they
 * reach a real OpenAI-compatible server on loopback: through the library (tenant, session and run layers,
 * and a script middleware that changes them), the CLI and the HTTP server.
 */

type ModelServer = Awaited<ReturnType<typeof startOpenAIServer>>;
const systemTexts = (request: any): string[] => request.messages.filter((m: any) => m.role === "system").map((m: any) => m.content);
/** The system message that shows the model the user context, parsed (undefined when there is none). */
const shownContext = (request: any): Record<string, unknown> | undefined => {
  const text = systemTexts(request).find((t) => t.startsWith("The user's original request (user context): "));
  return text === undefined ? undefined : JSON.parse(text.slice("The user's original request (user context): ".length));
};

const lookup: HostTool = {
  name: "lookup_order",
  description: "Look up an order",
  parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  handler: (args) => ({ id: args.id ?? null, total: 120 }),
};

let dir: string;
let pool: ReturnType<typeof createSandboxPool>;
const toolsModule = `export default [{ name: "lookup_order", description: "Look up an order", parameters: { type: "object" }, handler: () => ({ total: 120 }) }];`;
beforeAll(() => {
  dir = tmp("hookbox-instructions-");
  writeFileSync(join(dir, "tools.mjs"), toolsModule);
  pool = createSandboxPool();
});
afterAll(() => pool.close());

async function libraryRun(
  server: ModelServer,
  config: Partial<TenantConfig>,
  layers: { session?: RunOptions; run?: RunOptions; userContext?: RunOptions["userContext"] } = {},
) {
  const tenant: TenantConfig = {
    name: "t",
    scripts: [],
    model: { kind: "openai-compatible", model: "gpt-test", baseUrl: server.url },
    ...config,
  };
  const runtime = await createTenantRuntime(tenant, pool, { host: { tools: [lookup] } });
  const store = openMemoryStore();
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  const session = await manager.create({ tenant: "t", tenantConfig: tenant, defaults: layers.session ?? {} });
  const handle = await session.run("Refund order A17, I was charged twice", {
    ...layers.run,
    ...(layers.userContext ? { userContext: layers.userContext } : {}),
  });
  const result = await handle.wait();
  await manager.close();
  await store.close();
  return result;
}

describe("instructions and model settings through the library", () => {
  it("sends system first and the settings on every call; run over session over tenant, settings merged key by key", async () => {
    const server = await startOpenAIServer([{ toolCalls: [{ id: "c1", name: "lookup_order", args: { id: "A17" } }] }, { text: "done" }]);
    try {
      const result = await libraryRun(
        server,
        { runDefaults: { system: "tenant instructions", modelSettings: { temperature: 0.9, topP: 0.5, seed: 7 } } },
        {
          session: { system: "session instructions", modelSettings: { temperature: 0.4, maxOutputTokens: 300 } },
          run: {
            system: "You are a careful refund agent.",
            modelSettings: { temperature: 0.1, stopSequences: ["END"], toolChoice: "required" },
          },
        },
      );
      expect(result.status).toBe("completed");
      expect(server.requests).toHaveLength(2);
      for (const request of server.requests) {
        expect(request.messages[0]).toEqual({ role: "system", content: "You are a careful refund agent." });
        expect(systemTexts(request).join("\n")).not.toContain("tenant instructions");
        expect(systemTexts(request).join("\n")).not.toContain("session instructions");
        expect(request).toMatchObject({ temperature: 0.1, max_tokens: 300, top_p: 0.5, seed: 7, stop: ["END"], tool_choice: "required" });
      }
    } finally {
      await server.close();
    }
  });

  it("a tool choice naming one tool is sent as the provider's function choice; naming no offered tool fails the run with MODEL_SETTINGS", async () => {
    const server = await startOpenAIServer([{ text: "ok" }]);
    try {
      const forced = await libraryRun(server, {}, { run: { modelSettings: { toolChoice: { type: "tool", toolName: "lookup_order" } } } });
      expect(forced.status).toBe("completed");
      expect(server.requests[0].tool_choice).toEqual({ type: "function", function: { name: "lookup_order" } });
      const wrong = await libraryRun(server, {}, { run: { modelSettings: { toolChoice: { type: "tool", toolName: "nope" } } } });
      expect(wrong).toMatchObject({ status: "failed", errorCode: "MODEL_SETTINGS" });
      expect(wrong.reason).toContain('"nope"');
      expect(server.requests).toHaveLength(1); // nothing was sent for the refused settings
    } finally {
      await server.close();
    }
  });

  it("shows the model only the original request by default, exactly the allowed fields with a list, nothing with none; never a timestamp", async () => {
    const server = await startOpenAIServer([], { afterReplies: { text: "ok" } });
    const userContext = { userId: "u-42", riskScore: 0.93, plan: "gold", internalToken: "secret-123" };
    try {
      await libraryRun(server, {}, { userContext });
      expect(shownContext(server.requests[0])).toEqual({ originalUserRequest: "Refund order A17, I was charged twice" });
      const body = JSON.stringify(server.requests[0]);
      for (const hidden of ["u-42", "0.93", "secret-123", "timestampMs"]) expect(body).not.toContain(hidden);

      await libraryRun(server, { userContextToModel: ["userId", "plan", "missing"] }, { userContext });
      expect(shownContext(server.requests[1])).toEqual({
        originalUserRequest: "Refund order A17, I was charged twice",
        userId: "u-42",
        plan: "gold",
      });
      expect(JSON.stringify(server.requests[1])).not.toContain("secret-123");

      await libraryRun(server, { userContextToModel: "none" }, { userContext });
      expect(shownContext(server.requests[2])).toBeUndefined();
    } finally {
      await server.close();
    }
  });

  it("a script middleware sees the instructions and settings in the turn and changes them for the model call", async () => {
    const script = join(dir, "instructions.ts");
    writeFileSync(
      script,
      `import { defineScript, getKey, setKey, keys } from "hookbox";
export default defineScript({
  name: "instructions",
  middleware: [
    async function house(turn, next) {
      const system = getKey(turn.metadata, keys.turnMetadata.system) ?? "";
      const settings = getKey(turn.metadata, keys.turnMetadata.modelSettings) ?? {};
      setKey(turn.metadata, keys.turnMetadata.system, system + " Answer in French.");
      setKey(turn.metadata, keys.turnMetadata.modelSettings, { ...settings, temperature: 0, maxOutputTokens: 99 });
      return next(turn);
    },
  ],
});
`,
    );
    const server = await startOpenAIServer([{ text: "d'accord" }]);
    try {
      const result = await libraryRun(
        server,
        { scripts: [{ path: script }] },
        { run: { system: "Be brief.", modelSettings: { temperature: 0.7, topP: 0.3 } } },
      );
      expect(result.status).toBe("completed");
      expect(server.requests[0].messages[0]).toEqual({ role: "system", content: "Be brief. Answer in French." });
      expect(server.requests[0]).toMatchObject({ temperature: 0, max_tokens: 99, top_p: 0.3 });
    } finally {
      await server.close();
    }
  });
});

describe("instructions and model settings through the CLI", () => {
  it("--system @FILE, --temperature, --max-output-tokens, --top-p, --stop-sequence, --tool-choice reach the provider request", async () => {
    const server = await startOpenAIServer([{ text: "ok" }]);
    try {
      const file = join(dir, "system.txt");
      writeFileSync(file, "You are the refund desk.\nNever promise a date.");
      const run = await runCli([
        "run",
        "--model",
        "openai-compatible:gpt-test",
        "--base-url",
        server.url,
        "--prompt",
        "Refund A17",
        "--user-context",
        JSON.stringify({ userId: "u-7", tier: "gold" }),
        "--user-context-to-model",
        "tier",
        "--system",
        `@${file}`,
        "--temperature",
        "0.2",
        "--max-output-tokens",
        "256",
        "--top-p",
        "0.9",
        "--stop-sequence",
        "STOP",
        "--stop-sequence",
        "END",
        "--tool-choice",
        "none",
        "--host-tools",
        join(dir, "tools.mjs"),
        "--json",
      ]);
      expect(run.stderr).toBe("");
      expect(jsonLines(run.stdout).at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
      const request = server.requests[0];
      expect(request.messages[0]).toEqual({ role: "system", content: "You are the refund desk.\nNever promise a date." });
      expect(request).toMatchObject({ temperature: 0.2, max_tokens: 256, top_p: 0.9, stop: ["STOP", "END"], tool_choice: "none" });
      expect(shownContext(request)).toEqual({ originalUserRequest: "Refund A17", tier: "gold" });
    } finally {
      await server.close();
    }
  });

  it("a bad setting flag is a usage error naming the flag", async () => {
    for (const [flag, value, says] of [
      ["--temperature", "hot", "--temperature must be a number"],
      ["--temperature", "3", "--temperature"],
      ["--tool-choice", "sometimes", "--tool-choice: expected auto, none, required or tool:NAME"],
      ["--system", "@/nonexistent/system.txt", "--system @/nonexistent/system.txt: cannot read the file"],
      ["--user-context-to-model", "timestampMs", "timestampMs never goes to the model"],
    ]) {
      const run = await runCli(["run", "--model", "scripted:x.json", "--prompt", "hi", flag, value]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(says);
    }
  });
});

describe("instructions and model settings through the server", () => {
  it("tenant config, session defaults and the run body layer as in the library; the tenant's allow-list decides what the model sees", async () => {
    const model = await startOpenAIServer([], { afterReplies: { text: "ok" } });
    const configDir = tmp("hookbox-instructions-serve-");
    const config = join(configDir, "config.json");
    writeFileSync(join(configDir, "tools.mjs"), toolsModule);
    writeFileSync(
      config,
      JSON.stringify({
        tenants: [
          {
            name: "acme",
            apiKeys: [{ sha256: createHash("sha256").update("acme-key").digest("hex") }],
            model: "openai-compatible:gpt-test",
            baseUrl: model.url,
            hostTools: "tools.mjs",
            system: "You are Acme's assistant.",
            modelSettings: { temperature: 0.3, maxOutputTokens: 500 },
            userContextToModel: ["plan"],
          },
        ],
      }),
    );
    const server = await startServe({ config, store: join(configDir, "store.db") });
    try {
      const client = api(server.url, "acme-key");
      const plain = await client.request("POST", "/v1/sessions", {});
      const started = await client.request("POST", `/v1/sessions/${plain.body.sessionId}/runs`, {
        prompt: "hello",
        userContext: { userId: "u-1", plan: "pro", score: 3 },
      });
      await readEvents(server.url, "acme-key", started.body.runId);
      expect(model.requests[0].messages[0]).toEqual({ role: "system", content: "You are Acme's assistant." });
      expect(model.requests[0]).toMatchObject({ temperature: 0.3, max_tokens: 500 });
      expect(shownContext(model.requests[0])).toEqual({ originalUserRequest: "hello", plan: "pro" });

      const custom = await client.request("POST", "/v1/sessions", {
        defaults: { system: "Session voice.", modelSettings: { temperature: 0.6 } },
      });
      const run = await client.request("POST", `/v1/sessions/${custom.body.sessionId}/runs`, {
        prompt: "again",
        system: "Run voice.",
        modelSettings: { topP: 0.8, toolChoice: "none" },
      });
      expect(run.status).toBe(202);
      await readEvents(server.url, "acme-key", run.body.runId);
      expect(model.requests[1].messages[0]).toEqual({ role: "system", content: "Run voice." });
      expect(model.requests[1]).toMatchObject({ temperature: 0.6, max_tokens: 500, top_p: 0.8, tool_choice: "none" });

      const bad = await client.request("POST", `/v1/sessions/${custom.body.sessionId}/runs`, {
        prompt: "x",
        modelSettings: { temperature: 9 },
      });
      expect(bad).toMatchObject({ status: 400, body: { error: { code: "VALIDATION", path: "$.modelSettings.temperature" } } });
    } finally {
      await server.stop();
      await model.close();
    }
  });
});
