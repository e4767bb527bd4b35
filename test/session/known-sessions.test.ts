import { describe, expect, it } from "vitest";
import { KnownSessions } from "../../src/session/known-sessions.js";
import type { SessionRecord } from "../../src/store/types.js";

const record = (id: string, tenant = "acme"): SessionRecord => ({ id, tenant, tenantConfig: {}, defaults: {}, createdMs: 0 });

describe("KnownSessions", () => {
  it("keeps at most its limit, dropping the one remembered longest ago, and forgets on request", () => {
    const known = new KnownSessions(2);
    known.remember(record("a"));
    known.remember(record("b"));
    known.remember(record("a", "acme-again")); // remembered again: now the newest
    known.remember(record("c"));
    expect(known.get("b")).toBeUndefined();
    expect(known.get("a")).toEqual(record("a", "acme-again"));
    expect(known.get("c")).toEqual(record("c"));
    known.forget("c");
    expect(known.get("c")).toBeUndefined();
  });

  it("leaves out the starting turn given at creation (a fork's layout, a whole turn): the store used it once", () => {
    const known = new KnownSessions();
    const turn = { blocks: [{ id: "b1", kind: "user", role: "user", payload: { text: "hi" }, metadata: {} }] };
    known.remember({
      ...record("f"),
      base: { head: {}, blocks: [] } as unknown as SessionRecord["base"],
      initialTurn: turn as unknown as SessionRecord["initialTurn"],
    });
    expect(known.get("f")).toEqual(record("f"));
  });
});
