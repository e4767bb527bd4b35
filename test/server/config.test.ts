import { describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";
import { loadServerConfig } from "../../src/server/config.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

function fixtureWith(edit: (config: any) => void) {
  const fixture = writeFixture([
    { name: "acme", key: "k1", steps: twoToolSteps },
    { name: "globex", key: "k2", steps: twoToolSteps },
  ]);
  const config = JSON.parse(readFileSync(fixture.config, "utf8"));
  edit(config);
  writeFileSync(fixture.config, JSON.stringify(config));
  return fixture;
}

const cases: [string, (config: any) => void, RegExp][] = [
  ["an unknown field", (c) => (c.tenants[1].limitz = {}), /tenants\[1\]: unknown field "limitz"/],
  ["an unknown limit", (c) => (c.tenants[0].limits = { memoryMB: 1 }), /tenants\[0\]\.limits: unknown field "memoryMB"/],
  ["a missing script file", (c) => (c.tenants[0].scripts = ["nope.ts"]), /tenants\[0\]\.scripts\[0\]: file nope\.ts does not exist/],
  ["a missing host tools file", (c) => (c.tenants[1].hostTools = "gone.mjs"), /tenants\[1\]\.hostTools: file gone\.mjs does not exist/],
  ["a missing model file", (c) => (c.tenants[0].model = "scripted:none.json"), /tenants\[0\]\.model: file none\.json does not exist/],
  [
    "a bad model",
    (c) => (c.tenants[0].model = "gpt-4"),
    /tenants\[0\]\.model: expected "scripted:FILE", "openai-compatible:MODEL" \(with the tenant's "baseUrl"\) or \{"kind": "openai-compatible"/,
  ],
  [
    "an api key of neither shape",
    (c) => (c.tenants[0].apiKeys = [{ key: "secret" }]),
    /tenants\[0\]\.apiKeys\[0\]: expected \{"env": "VARIABLE_NAME"\} or \{"sha256": "<64 hex digits: the SHA-256 of the key>"\}$/,
  ],
  [
    "a bad kv grant",
    (c) => (c.tenants[0].kv = true),
    /tenants\[0\]\.kv: expected false \(no ctx\.kv\) or \{"quotaBytes"\?: a positive integer\}$/,
  ],
  [
    "an openai-compatible:MODEL string without the tenant's baseUrl",
    (c) => (c.tenants[0].model = "openai-compatible:gpt-4o-mini"),
    /tenants\[0\]\.model: "openai-compatible:gpt-4o-mini" needs the tenant's "baseUrl"/,
  ],
  ["a duplicate tenant", (c) => (c.tenants[1].name = "acme"), /tenants\[1\]\.name: duplicate tenant "acme" \(also tenants\[0\]\)/],
  [
    "a duplicate key",
    (c) => (c.tenants[1].apiKeys = c.tenants[0].apiKeys),
    /tenants\[1\]\.apiKeys\[0\]: duplicate key \(the same key as tenants\[0\]\.apiKeys\[0\]\)/,
  ],
  [
    "an unset key variable",
    (c) => (c.tenants[0].apiKeys = [{ env: "HOOKBOX_TEST_UNSET_KEY" }]),
    /tenants\[0\]\.apiKeys\[0\]\.env: environment variable HOOKBOX_TEST_UNSET_KEY is not set/,
  ],
  ["a bad sha256", (c) => (c.tenants[0].apiKeys = [{ sha256: "abc" }]), /tenants\[0\]\.apiKeys\[0\]\.sha256: must be 64 hex digits/],
  ["no tenants", (c) => (c.tenants = []), /config .*: tenants: /],
  [
    "a price that is not a number",
    (c) => (c.tenants[0].pricing = { "gpt-4o": { inputPerMTok: "cheap", outputPerMTok: 1 } }),
    /tenants\[0\]\.pricing\.gpt-4o\.inputPerMTok: /,
  ],
  [
    "a pricing entry with a typo",
    (c) => (c.tenants[0].pricing = { "*": { inputPerMtok: 1, outputPerMTok: 1 } }),
    /tenants\[0\]\.pricing\.\*\.inputPerMTok: /,
  ],
  [
    "a missing fallback model file",
    (c) => (c.tenants[1].fallbackModel = "scripted:gone.json"),
    /tenants\[1\]\.fallbackModel: file gone\.json does not exist/,
  ],
  ["a negative maxCostUsd", (c) => (c.tenants[0].limits = { maxCostUsd: -1 }), /tenants\[0\]\.limits\.maxCostUsd: /],
  ["a context budget that is not a count", (c) => (c.tenants[0].context = { maxTokens: 0.5 }), /tenants\[0\]\.context\.maxTokens: /],
  [
    "summaries without a guard model",
    (c) => (c.tenants[0].context = { summarize: true }),
    /tenants\[0\]\.context\.summarize: summaries are made by the tenant's guard model: give the tenant a "guardModel"/,
  ],
];

describe("serve config", () => {
  it("reads the store: a postgres:// URL as it is, a SQLite path relative to the config, a variable's value; lease and node", () => {
    const url = "postgres://hookbox:secret@db.internal/hookbox";
    const atUrl = fixtureWith((c) => ((c.store = url), (c.server = { leaseMs: 5000, node: "node-a" })));
    expect(loadServerConfig(atUrl.config)).toMatchObject({ store: url, leaseMs: 5000, node: "node-a" });
    const atFile = fixtureWith((c) => (c.store = "data/store.db"));
    expect(loadServerConfig(atFile.config).store).toBe(join(atFile.dir, "data", "store.db"));
    const fromEnv = fixtureWith((c) => (c.store = { env: "HOOKBOX_TEST_STORE_URL" }));
    expect(loadServerConfig(fromEnv.config, { env: { HOOKBOX_TEST_STORE_URL: url } }).store).toBe(url);
    expect(() => loadServerConfig(fromEnv.config, { env: {} })).toThrow(
      /store\.env: environment variable HOOKBOX_TEST_STORE_URL is not set/,
    );
    const shortLease = fixtureWith((c) => (c.server = { leaseMs: 10 }));
    expect(() => loadServerConfig(shortLease.config)).toThrow(/server\.leaseMs/);
  });

  it("reads pricing, the fallback model and the budget limits into the tenant config", () => {
    const fixture = fixtureWith((c) => {
      c.tenants[0].pricing = { "*": { inputPerMTok: 3, outputPerMTok: 15 } };
      c.tenants[0].fallbackModel = { kind: "openai-compatible", model: "backup", baseUrl: "http://127.0.0.1:9/v1" };
      c.tenants[0].limits = { maxTokens: 5000, maxCostUsd: 0.25, modelRetries: 0 };
    });
    const acme = loadServerConfig(fixture.config, { env: {} }).tenants[0].config;
    expect(acme.pricing).toEqual({ "*": { inputPerMTok: 3, outputPerMTok: 15 } });
    expect(acme.fallbackModel).toEqual({ kind: "openai-compatible", model: "backup", baseUrl: "http://127.0.0.1:9/v1" });
    expect(acme.runDefaults).toMatchObject({ maxTokens: 5000, maxCostUsd: 0.25, modelRetries: 0 });
  });

  it("reads the tenant's context budget and policy as the default of its runs", () => {
    const fixture = fixtureWith((c) => {
      c.tenants[0].context = { maxTokens: 8000, maxBytes: 40000, summarize: true };
      c.tenants[0].guardModel = "run";
    });
    expect(loadServerConfig(fixture.config, { env: {} }).tenants[0].config.runDefaults).toEqual({
      context: { maxTokens: 8000, maxBytes: 40000, summarize: true },
    });
  });

  it.each(cases)("names the field for %s", (_what, edit, message) => {
    const fixture = fixtureWith(edit);
    expect(() => loadServerConfig(fixture.config, { env: {} })).toThrowError(message);
  });

  it("stops hookbox serve with exit 2 and one line naming the file and field", async () => {
    const fixture = fixtureWith((c) => (c.tenants[1].name = "acme"));
    const result = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", fixture.config]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`config ${fixture.config}: tenants[1].name: duplicate tenant "acme"`);
  });

  it("accepts the CLI's openai-compatible:MODEL string, with the tenant's baseUrl and apiKeyEnv as --base-url and --api-key-env", () => {
    const fixture = fixtureWith((c) => {
      c.tenants[0].model = "openai-compatible:gpt-4o-mini";
      c.tenants[0].fallbackModel = "openai-compatible:backup";
      c.tenants[0].baseUrl = "http://127.0.0.1:9/v1";
      c.tenants[0].apiKeyEnv = "ACME_OPENAI_KEY";
    });
    const acme = loadServerConfig(fixture.config).tenants[0].config;
    expect(acme.model).toEqual({
      kind: "openai-compatible",
      model: "gpt-4o-mini",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKeyEnv: "ACME_OPENAI_KEY",
    });
    expect(acme.fallbackModel).toEqual({
      kind: "openai-compatible",
      model: "backup",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKeyEnv: "ACME_OPENAI_KEY",
    });
  });

  it("a JSON syntax error in the config or a scripted model file names the line and column, and echoes nothing of the file", async () => {
    const fixture = writeFixture([{ name: "acme", key: "k1", steps: twoToolSteps }]);
    const broken = join(fixture.dir, "broken.json");
    writeFileSync(broken, '{\n  "tenants": [\n    { "name": "acme", "apiKeys": [{ "sha256": "s3cr3t" }], },\n  ]\n}\n');
    const bad = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", broken]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      `hookbox serve: CONFIG: config ${broken}: not valid JSON: line 3 column 58: a trailing comma: JSON allows no ',' before '}'\n`,
    );

    const model = join(fixture.dir, "model.json");
    writeFileSync(model, '{"steps": [\n  {"text": "hi"}\n  {"text": "again"}\n]}');
    const run = await runCli(["run", "--model", `scripted:${model}`, "--prompt", "x"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `hookbox run: CONFIG: scripted model ${model}: not valid JSON: line 3 column 3: unexpected '{': expected ',' or ']' after an array element\n`,
    );
  });

  it("stops hookbox serve with exit 2 on a config that is not JSON, and on a bad store", async () => {
    const fixture = writeFixture([{ name: "acme", key: "k1", steps: twoToolSteps }]);
    const broken = join(fixture.dir, "broken.json");
    writeFileSync(broken, "{ tenants: ");
    const bad = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", broken]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`config ${broken}`);
    const notStore = join(fixture.dir, "not-a-store.db");
    writeFileSync(notStore, "garbage".repeat(200));
    const badStore = await runCli(["serve", "--port", "0", "--store", notStore, "--config", fixture.config]);
    expect(badStore.code).toBe(2);
    expect(badStore.stderr).toMatch(/not-a-store\.db is not a hookbox store/);
  });

  it("resolves paths relative to the config file and reads limits into runtime settings", () => {
    const fixture = fixtureWith((c) => (c.tenants[0].limits = { memoryMb: 32, cpuMs: 50, maxIterations: 4, runsPerMinute: 7 }));
    const config = loadServerConfig(fixture.config);
    const acme = config.tenants[0];
    expect(acme.config.hostToolsModule).toBe(join(fixture.dir, "tools.mjs"));
    expect(acme.config.model).toEqual({ kind: "scripted", file: join(fixture.dir, "acme-model.json") });
    expect(acme.config.limits).toEqual({ memoryMb: 32, cpuMs: 50 });
    expect(acme.config.runDefaults).toEqual({ maxIterations: 4 });
    expect(acme.runsPerMinute).toBe(7);
    expect(config.host).toBe("127.0.0.1");
  });
});
