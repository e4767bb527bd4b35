import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { join } from "node:path";
import { hostPathRedactor, redactToolErrors } from "../../src/server/redact.js";
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

describe("the redactor's candidates, each on its own", () => {
  // The working folder is a candidate too: seen from "/" (never a path to hide), each other candidate is seen alone.
  beforeAll(() => void vi.spyOn(process, "cwd").mockReturnValue("/"));
  afterAll(() => vi.restoreAllMocks());

  it("hookbox's install folder (holding src/ or dist/) goes whole, wherever the process runs", () => {
    const redact = hostPathRedactor({ storeLocation: ":memory:", configFile: "/etc/hookbox/config.json" });
    expect(redact(`at f (${join(repoRoot, "src/loop/loop.ts")}:1:2)`)).toBe("at f (<host>/src/loop/loop.ts:1:2)");
    expect(redact(`${join(repoRoot, "dist/cli.js")}`)).toBe("<host>/dist/cli.js");
    // A sibling that only shares the prefix is not the install folder (its own parent may be another
    // candidate, such as the temporary folder when the checkout lives in /tmp).
    expect(redact(`${repoRoot}-other/x`)).not.toMatch(/^<host>-other/);
    expect(redact(`${repoRoot}-other/x`)).toMatch(/-other\/x$/);
  });

  it("an in-memory store adds no candidate, and neither does a root folder: text with slashes stays", () => {
    const redact = hostPathRedactor({ storeLocation: ":memory:", configFile: "/config.json" });
    expect(redact("no route GET /v1/sessions/abc")).toBe("no route GET /v1/sessions/abc");
    expect(redact("/:memory: and :memory:")).toBe("/:memory: and :memory:");
  });

  it("the longest candidate wins where one folder holds another, and every occurrence goes", () => {
    // The store's folder (/srv) holds the config's folder (/srv/conf): /srv/conf/... goes as a whole.
    const redact = hostPathRedactor({ storeLocation: "/srv/store.db", configFile: "/srv/conf/config.json" });
    expect(redact("/srv/conf/tools.mjs and /srv/other")).toBe("<host>/tools.mjs and <host>/other");
    expect(redact("/srv/store.db, again /srv/store.db")).toBe("<host>, again <host>");
  });
});

describe("tool errors in a session view's JSON text", () => {
  const redact = hostPathRedactor({ storeLocation: "/srv/hookbox/data/store.db", configFile: "/etc/hookbox/config.json" });

  it("redacts each tool error's message, quotes and escapes kept, and leaves the rest of the text as it was", () => {
    const turn = {
      prompt: "look in /etc/hookbox/notes",
      blocks: [
        { kind: "tool_use", payload: { id: "c1", error: { message: 'cannot open "/etc/hookbox/a.log"\n', code: "TOOL_ERROR" } } },
        { kind: "tool_use", payload: { id: "c2", result: { path: "/etc/hookbox/b" } } },
        { kind: "tool_use", payload: { id: "c3", error: { message: "/srv/hookbox/data/store.db is full" } } },
      ],
    };
    const redacted = JSON.parse(redactToolErrors(JSON.stringify(turn), redact)) as typeof turn;
    expect(redacted.blocks.map((block) => block.payload)).toEqual([
      { id: "c1", error: { message: 'cannot open "<host>/a.log"\n', code: "TOOL_ERROR" } },
      { id: "c2", result: { path: "/etc/hookbox/b" } },
      { id: "c3", error: { message: "<host> is full" } },
    ]);
    expect(redacted.prompt).toBe("look in /etc/hookbox/notes");
  });
});
