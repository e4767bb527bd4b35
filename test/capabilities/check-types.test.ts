import { describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";

/* `hookbox check` knows ctx.fetch, ctx.kv and ctx.model: right use compiles, wrong use is reported at its line. */

describe("hookbox check and capability types", () => {
  it("accepts correct use in hooks, middleware and tools, and reports misuse at its line", async () => {
    const dir = tmp("hookbox-cap-check-");
    const good = join(dir, "good.ts");
    writeFileSync(
      good,
      `import { defineScript } from "hookbox";
export default defineScript({
  middleware: [async function m(turn, next, ctx) { await ctx.kv.set("seen", true, { ttlMs: 1000 }); return next(turn); }],
  tools: [{ name: "t", description: "d", parameters: { type: "object" }, async handler(args, ctx) {
    const r = await ctx.fetch("https://x.example/api", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    return { status: r.status, data: r.json(), keys: (await ctx.kv.list("a")).keys };
  } }],
  hooks: { async beforeToolCall(p) {
    const g = await p.model.generate({ messages: [{ role: "system", content: "judge" }], prompt: "x", maxTokens: 5 });
    return g.text.startsWith("NO") ? { action: "deny", reason: g.text } : undefined;
  } },
});
`,
    );
    const goodResult = await runCli(["check", good]);
    expect(goodResult.stdout + goodResult.stderr).toBe("");
    expect(goodResult.code).toBe(0);

    const bad = join(dir, "bad.ts");
    writeFileSync(
      bad,
      `import { defineScript } from "hookbox";
export default defineScript({
  hooks: { async beforeToolCall(p) {
    await p.kv.set(42, "v");
    await p.fetch("https://x.example", { method: "TRACE" });
    await p.model.generate({ messages: [{ role: "robot", content: "x" }] });
    return undefined;
  } },
});
`,
    );
    const badResult = await runCli(["check", bad]);
    expect(badResult.code).not.toBe(0);
    const out = badResult.stdout + badResult.stderr;
    expect(out).toMatch(/bad\.ts:4:\d+/);
    expect(out).toMatch(/bad\.ts:5:\d+/);
    expect(out).toMatch(/bad\.ts:6:\d+/);
  });
});
