import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { hostPathRedactor } from "../../src/server/redact.js";
import { repoRoot } from "../helpers/cli.js";

describe("the redactor at the server's error boundary", () => {
  const redact = hostPathRedactor({ storeLocation: "/srv/hookbox/data/store.db", configFile: "/etc/hookbox/config.json" });

  it("takes out the store, the config's folder and hookbox's own files, in any form", () => {
    expect(redact("store /srv/hookbox/data/store.db: could not append")).toBe("store <host>: could not append");
    expect(redact("at file:///etc/hookbox/tools.mjs:3:9")).toBe("at <host>/tools.mjs:3:9");
    expect(redact(`at run (${join(repoRoot, "dist/chunks/chunk-X.js")}:1:2)`)).toBe("at run (<host>/dist/chunks/chunk-X.js:1:2)");
    expect(redact(`cwd ${process.cwd()}/x`)).not.toContain(process.cwd());
  });

  it("leaves the tenant's own text alone, and paths that only share a prefix", () => {
    expect(redact("no route GET /v1/sessions/abc")).toBe("no route GET /v1/sessions/abc");
    expect(redact("/srv/hookbox/data-other/file")).toBe("/srv/hookbox/data-other/file");
  });
});
