import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { hookRuntime } from "./hook-runtime.js";
import { startLoopback, type Loopback } from "./loopback.js";

/*
 * An egress secret as operators really set it: read from a file (a trailing newline), from a CRLF .env (a
 * carriage return), with a stray space, or broken (a newline inside, a character no header can carry). What
 * is sent is the value without the whitespace around it, and that is what is redacted from what an echoing
 * service hands back; an unusable value stops the CLI and the server at start, naming the entry and the
 * variable, and a request in a library host whose environment changed fails by the same names. The value
 * itself is never in an error, an event or the output. The echoing service is a real loopback server.
 */

const SECRET = "sk-live-7f3a9c2e51d04b8a";

const echo = `import { defineScript } from "hookbox";
export default defineScript({
  name: "echo",
  onHookError: "fail-open",
  hooks: {
    async beforeToolCall(p) {
      try {
        const r = await p.fetch((p.call.args.base as string) + "/api/echo");
        console.log(JSON.stringify({ body: r.body.slice(0, 1500), auth: r.headers["x-echo-auth"] }));
      } catch (e) {
        console.log(JSON.stringify({ code: (e as any).code, message: (e as Error).message }));
      }
      return undefined;
    },
  },
});
`;

let loopback: Loopback;
let dir: string;
let pool: SupervisedSandboxPool;

beforeAll(async () => {
  loopback = await startLoopback();
  pool = createSandboxPool({ workers: 1 });
  dir = tmp("hookbox-secrets-");
  writeFileSync(join(dir, "echo.ts"), echo);
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "refund", description: "r", parameters: { type: "object" }, handler: async () => ({ ok: true }) }];`,
  );
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "refund", args: { base: loopback.url } }] }, { text: "done" }] }),
  );
});
afterAll(async () => {
  await pool?.close();
  await loopback?.close();
});

const entry = () =>
  JSON.stringify({ url: `${loopback.url}/api/`, allowPrivate: true, headers: { authorization: { env: "GUARD_KEY", prefix: "Bearer " } } });

function run(value: string) {
  return runCli(
    [
      "run",
      join(dir, "echo.ts"),
      "--prompt",
      "refund",
      "--model",
      `scripted:${join(dir, "model.json")}`,
      "--host-tools",
      join(dir, "tools.mjs"),
      "--json",
      "--egress",
      entry(),
    ],
    { env: { GUARD_KEY: value } },
  );
}

/** Every piece of the secret a careless error could quote (the value, and each line of it). */
const pieces = (value: string) => [SECRET, ...value.split(/[\r\n]/).filter((piece) => piece.trim().length > 6)];

describe("egress secrets", () => {
  it.each([
    ["a trailing newline (a secret file)", `${SECRET}\n`],
    ["a CRLF (a Windows .env)", `${SECRET}\r\n`],
    ["spaces around it", `  ${SECRET} `],
    ["a tab before it", `\t${SECRET}`],
  ])("a value with %s is sent without it and redacted as sent", async (_name, value) => {
    await loopback.clear();
    const { code, stdout, stderr } = await run(value);
    expect(code, stderr).toBe(0);
    const received = (await loopback.received()).find((request) => request.path === "/api/echo");
    expect(received?.headers.authorization).toBe(`Bearer ${SECRET}`);
    const seen = JSON.parse(jsonLines(stdout).find((event) => event.type === "log").message);
    expect(seen.body).toContain('"authorization":"Bearer [redacted]"');
    expect(seen.auth).toBe("Bearer [redacted]");
    expect(stdout).not.toContain(SECRET);
    expect(stderr).not.toContain(SECRET);
  });

  it.each([
    ["a newline inside (a header injection)", `${SECRET}\nX-Injected: yes`, "it contains a line break"],
    ["a character outside Latin-1", `${SECRET}€`, "outside Latin-1"],
    ["a control character", `${SECRET}\u0001`, "a control character"],
    ["only whitespace", " \r\n", "only whitespace"],
  ])("a value with %s stops the CLI at start, naming the entry and the variable, never the value", async (_name, value, problem) => {
    await loopback.clear();
    const { code, stdout, stderr } = await run(value);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `egress[0]: the egress entry ${loopback.url}/api/ adds header "authorization" from environment variable GUARD_KEY`,
    );
    expect(stderr).toContain(problem);
    for (const piece of pieces(value)) {
      expect(stderr).not.toContain(piece);
      expect(stdout).not.toContain(piece);
    }
    expect(await loopback.received()).toEqual([]);
  });

  it("hookbox serve refuses to start with an unusable secret, naming the tenant's entry and the variable", async () => {
    const fixture = writeFixture([{ name: "acme", key: "k1", steps: twoToolSteps }]);
    const config = JSON.parse(readFileSync(fixture.config, "utf8"));
    config.tenants[0].egress = [{ url: "https://guard.example.com/v1/", headers: { "x-api-key": { env: "GUARD_KEY" } } }];
    writeFileSync(fixture.config, JSON.stringify(config));
    const result = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", fixture.config], {
      env: { GUARD_KEY: `${SECRET}\r\nX-Injected: yes` },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /tenant acme: egress\[0\]: .*header "x-api-key" from environment variable GUARD_KEY, whose value cannot be sent/,
    );
    expect(result.stderr + result.stdout).not.toContain(SECRET);
  }, 30_000);

  it("a library host whose variable became unusable after start: CAPABILITY_FAILED naming the entry and the variable", async () => {
    process.env.HOOKBOX_TEST_SECRET = SECRET;
    const runtime = await hookRuntime({
      pool,
      tenant: "changed-env",
      script: echo,
      args: { base: loopback.url },
      capabilities: {
        egress: [{ url: `${loopback.url}/api/`, allowPrivate: true, headers: { authorization: { env: "HOOKBOX_TEST_SECRET" } } }],
      },
    });
    process.env.HOOKBOX_TEST_SECRET = `${SECRET}\nX-Injected: yes`;
    await loopback.clear();
    try {
      const handle = runtime.start({ sessionId: "sess_changed", prompt: "go" });
      const events: HookboxEvent[] = [];
      for await (const event of handle.events()) events.push(event);
      const seen = JSON.parse((events.find((event) => event.type === "log") as { message: string }).message);
      expect(seen).toEqual({
        code: "CAPABILITY_FAILED",
        message: `ctx.fetch: the egress entry ${loopback.url}/api/ adds header "authorization" from environment variable HOOKBOX_TEST_SECRET, whose value cannot be sent: it contains a line break`,
      });
      expect(events.find((event) => event.type === "capability")).toMatchObject({ ok: false, errorCode: "CAPABILITY_FAILED" });
      expect(JSON.stringify(events)).not.toContain(SECRET);
      expect(await loopback.received()).toEqual([]);
    } finally {
      delete process.env.HOOKBOX_TEST_SECRET;
    }
  });
});
