import { describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { runCli } from "../helpers/cli.js";
import { loadServerConfig } from "../../src/server/config.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";

/* The serve config's capability fields: parsed into grants; a bad one is a CONFIG error naming its field. */

function fixtureWith(edit: (config: any) => void) {
  const fixture = writeFixture([{ name: "acme", key: "k1", steps: twoToolSteps }]);
  const config = JSON.parse(readFileSync(fixture.config, "utf8"));
  edit(config);
  writeFileSync(fixture.config, JSON.stringify(config));
  return fixture;
}

describe("serve config: capabilities", () => {
  it("reads egress, guardModel, kv and capabilityLimits into the tenant's grants", () => {
    const fixture = fixtureWith((c) => {
      c.tenants[0].egress = [
        "https://api.example.com/v1/",
        { url: "https://guard.example.com/", headers: { authorization: { env: "GUARD_KEY", prefix: "Bearer " } } },
        { url: "http://10.1.2.3:8080/", allowPrivate: ["10.1.0.0/16"] },
      ];
      c.tenants[0].guardModel = "run";
      c.tenants[0].kv = { quotaBytes: 5000 };
      c.tenants[0].capabilityLimits = { maxFetchesPerRun: 3, fetchTimeoutMs: 100 };
    });
    const tenant = loadServerConfig(fixture.config).tenants[0].config;
    expect(tenant.capabilities).toEqual({
      egress: [
        "https://api.example.com/v1/",
        { url: "https://guard.example.com/", headers: { authorization: { env: "GUARD_KEY", prefix: "Bearer " } } },
        { url: "http://10.1.2.3:8080/", allowPrivate: ["10.1.0.0/16"] },
      ],
      guardModel: "run",
      limits: { maxFetchesPerRun: 3, fetchTimeoutMs: 100, kvQuotaBytes: 5000 },
    });
  });

  const cases: [string, (config: any) => void, RegExp][] = [
    ["an egress entry that is not a URL", (c) => (c.tenants[0].egress = ["nope"]), /tenants\[0\]\.egress\[0\]: "nope" is not a URL/],
    ["an ftp egress entry", (c) => (c.tenants[0].egress = ["ftp://x/"]), /tenants\[0\]\.egress\[0\]: "ftp:\/\/x\/": only http and https/],
    ["an egress entry with credentials", (c) => (c.tenants[0].egress = ["https://u:p@x/"]), /tenants\[0\]\.egress\[0\]: .*credentials/],
    [
      "a bad header variable",
      (c) => (c.tenants[0].egress = [{ url: "https://x/", headers: { a: { env: "1x" } } }]),
      /tenants\[0\]\.egress\[0\]\.headers\.a\.env: must be an environment variable name/,
    ],
    [
      "a loopback egress entry without allowPrivate",
      (c) => (c.tenants[0].egress = ["http://127.0.0.1:8080/"]),
      /tenants\[0\]\.egress\[0\]: "http:\/\/127\.0\.0\.1:8080\/" names a non-public address; add "allowPrivate"/,
    ],
    [
      "a link-local entry outside its allowPrivate networks",
      (c) => (c.tenants[0].egress = [{ url: "http://169.254.169.254/", allowPrivate: ["10.0.0.0/8"] }]),
      /tenants\[0\]\.egress\[0\]: .* names a non-public address/,
    ],
    [
      "an allowPrivate network that is not CIDR",
      (c) => (c.tenants[0].egress = [{ url: "http://partner.internal/", allowPrivate: ["10.0.0.1/8"] }]),
      /tenants\[0\]\.egress\[0\]\.allowPrivate\[0\]: "10\.0\.0\.1\/8" is not a network in CIDR notation/,
    ],
    [
      "an unknown capability limit",
      (c) => (c.tenants[0].capabilityLimits = { maxFetches: 1 }),
      /tenants\[0\]\.capabilityLimits: unknown field "maxFetches"/,
    ],
    [
      "a request body limit over 1 MiB",
      (c) => (c.tenants[0].capabilityLimits = { maxRequestBytes: 2 ** 21 }),
      /tenants\[0\]\.capabilityLimits\.maxRequestBytes/,
    ],
    ["an unknown kv field", (c) => (c.tenants[0].kv = { quota: 1 }), /tenants\[0\]\.kv/],
    [
      "a missing guard model file",
      (c) => (c.tenants[0].guardModel = "scripted:none.json"),
      /tenants\[0\]\.guardModel: file none\.json does not exist/,
    ],
  ];
  it.each(cases)("refuses %s, naming the field", (_name, edit, message) => {
    const fixture = fixtureWith(edit);
    expect(() => loadServerConfig(fixture.config)).toThrow(message);
  });

  it("hookbox serve exits 2 with the field for a bad egress entry", async () => {
    const fixture = fixtureWith((c) => (c.tenants[0].egress = ["https://x/?q=1"]));
    const result = await runCli(["serve", "--port", "0", "--store", fixture.store, "--config", fixture.config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/tenants\[0\]\.egress\[0\]: .*no query or fragment/);
  });
});
