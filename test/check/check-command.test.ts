import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkCommand } from "../../src/cli/commands/check.js";
import { capture, tempDir } from "../codegen/helpers.js";
import { runCli } from "../helpers/cli.js";
import { writeSteps } from "../helpers/harness.js";

function script(name: string, text: string): string {
  const dir = tempDir("hookbox-check-");
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** The 1-based line of the first line containing `marker`. */
function lineOf(text: string, marker: string): number {
  return text.split("\n").findIndex((line) => line.includes(marker)) + 1;
}

const GOOD = `import { defineScript, getKey, keys, setKey } from "hookbox";

export default defineScript({
  name: "refund-policy",
  onHookError: "fail-closed",
  middleware: [
    async function stamp(turn, next, ctx) {
      setKey(turn.metadata, keys.turnMetadata.model, "scripted");
      const request = getKey(turn.metadata, keys.turnMetadata.userContext)?.originalUserRequest ?? "";
      console.log(ctx.middlewareName, request.length);
      return next(turn);
    },
    { name: "passThrough", run: (turn, next) => next() },
  ],
  tools: [{
    name: "lookup_order",
    description: "Look up an order",
    parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    async handler(args, ctx) { return { id: args.id, total: 120, attempt: ctx.attempt }; },
  }],
  hooks: {
    beforeToolCall(p) { if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" }; },
    afterToolCall(p) { return { result: p.result ?? null }; },
    onToolError(p) { return p.attempt < 3 ? { action: "retry", backoffMs: 50 } : { action: "fail" }; },
  },
});
`;

describe("hookbox check", () => {
  it("accepts a correct script (the contract's example shape) with exit 0 and no output", async () => {
    const result = await capture(() => checkCommand([script("good.ts", GOOD)]));
    expect(result.stdout).toBe("");
    expect(result.code).toBe(0);
  });

  it("reports a number written into a string-typed key at its line", async () => {
    const text = GOOD.replace('keys.turnMetadata.model, "scripted")', "keys.turnMetadata.model, 42) // WRONG");
    const file = script("wrong-key.ts", text);
    const result = await capture(() => checkCommand([file]));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${file}:${lineOf(text, "WRONG")}:`);
    expect(result.stdout).toMatch(/ - error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'/);
  });

  it.each([
    ["deny without reason", `return { action: "deny" }; // BAD`, "TS2322", "Property 'reason' is missing"],
    ["an unknown action", `return { action: "explode" }; // BAD`, "TS2322", `Type '"explode"' is not assignable`],
    ["an extra field", `return { action: "deny", reason: "r", because: 1 }; // BAD`, "TS2353", "'because' does not exist"],
  ])("reports a hook returning %s at the return's line", async (_label, badReturn, code, message) => {
    const text = GOOD.replace(
      "    beforeToolCall(p) { if",
      `    beforeToolCall(p) {\n      if (p.attempt > 2) {\n        ${badReturn}\n      }\n      if`,
    );
    const file = script("bad-hook.ts", text);
    const result = await capture(() => checkCommand([file]));
    expect(result.code).toBe(1);
    const line = lineOf(text, "// BAD");
    expect(result.stdout).toMatch(new RegExp(`^${escape(file)}:${line}:\\d+ - error ${code}: `, "m"));
    expect(result.stdout).toContain(message);
    expect(result.stdout.split("\n").filter((l) => / - error TS/.test(l))).toHaveLength(1);
  });

  it("checks async arrow hooks return by return too", async () => {
    const text = GOOD.replace(
      "    onToolError(p) {",
      `    afterToolCall: async p => {\n      if (p.error) return { action: "abort" }; // BAD\n      return undefined;\n    },\n    onToolError(p) {`,
    ).replace("    afterToolCall(p) { return { result: p.result ?? null }; },\n", "");
    const file = script("arrow.ts", text);
    const result = await capture(() => checkCommand([file]));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^${escape(file)}:${lineOf(text, "// BAD")}:\\d+ - error TS2322: `, "m"));
  });

  it("types block payloads by kind: isBlockKind narrows reasoning and provider-run calls", async () => {
    const typed = `import { BlockKinds, defineScript, isBlockKind, type Block } from "hookbox";

const signature = (block: Block): string | undefined => {
  if (!isBlockKind(block, BlockKinds.reasoning)) return undefined;
  const text: string = block.payload.text;
  const metadata = block.payload.provider_metadata?.anthropic;
  return typeof metadata === "object" && metadata !== null && !Array.isArray(metadata) ? String(metadata.signature) + text : undefined;
};

export default defineScript({
  middleware: [
    async function audit(turn, next) {
      const out = await next(turn);
      for (const block of out.blocks) {
        if (isBlockKind(block, BlockKinds.providerToolCall)) console.log(block.payload.name.toUpperCase(), block.payload.args);
        else console.log(signature(block));
      }
      return out;
    },
  ],
  hooks: {
    beforeToolCall(p) { if (p.call.providerExecuted && p.call.origin === "provider") return { action: "abort", reason: p.call.rawArgs ?? "web" }; },
    beforeFinish(p) { if (p.finishReason === "length") return { action: "continue", message: "go on" }; },
  },
});
`;
    const good = await capture(() => checkCommand([script("typed.ts", typed)]));
    expect(good.stdout).toBe("");
    expect(good.code).toBe(0);
    const wrong = typed.replace("block.payload.name.toUpperCase()", "block.payload.name.toFixed() // WRONG");
    const file = script("typed-wrong.ts", wrong);
    const bad = await capture(() => checkCommand([file]));
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(
      new RegExp(
        `^${escape(file)}:${lineOf(wrong, "// WRONG")}:\\d+ - error TS2551: Property 'toFixed' does not exist on type 'string'`,
        "m",
      ),
    );
  });

  it("reports a middleware that returns nothing", async () => {
    const text = GOOD.replace("      return next(turn);\n", "      await next(turn);\n");
    const result = await capture(() => checkCommand([script("no-return.ts", text)]));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/error TS2322: .*void/);
  });

  it("follows relative imports", async () => {
    const dir = tempDir("hookbox-check-");
    writeFileSync(join(dir, "limits.ts"), "export const LIMIT: number = 'a hundred';\n");
    writeFileSync(join(dir, "main.ts"), `import { LIMIT } from "./limits";\nexport const twice = LIMIT * 2;\n`);
    const result = await capture(() => checkCommand([join(dir, "main.ts")]));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${join(dir, "limits.ts")}:1:14 - error TS2322`);
  });

  it("prints paths relative to the working directory", async () => {
    const dir = tempDir("hookbox-check-");
    mkdirSync(join(dir, "scripts"));
    writeFileSync(join(dir, "scripts", "s.ts"), `const n: number = "x";\nexport {};\n`);
    const previous = process.cwd();
    process.chdir(dir);
    try {
      const result = await capture(() => checkCommand(["scripts/s.ts"]));
      expect(result.stdout).toMatch(/^scripts\/s\.ts:1:7 - error TS2322: Type 'string' is not assignable to type 'number'\.$/m);
    } finally {
      process.chdir(previous);
    }
  });

  it("exits 2 naming an unreadable input, and checks nothing", async () => {
    const dir = tempDir("hookbox-check-");
    const locked = join(dir, "locked.ts");
    writeFileSync(locked, "export {};\n");
    chmodSync(locked, 0o000);
    const inputs = [join(dir, "missing.ts"), dir, ...(process.getuid?.() === 0 ? [] : [locked])];
    const result = await capture(() => checkCommand(inputs));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`cannot read ${join(dir, "missing.ts")}: no such file`);
    expect(result.stderr).toContain(`cannot read ${dir}: not a file`);
    if (process.getuid?.() !== 0) expect(result.stderr).toContain(`cannot read ${locked}: permission denied`);
    expect(result.stdout).toBe("");
  });

  it("exits 2 with usage when given no script", async () => {
    const result = await capture(() => checkCommand([]));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("usage: hookbox check <script...>");
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("hookbox check: a decision a hook builds and does not return", () => {
  it("is a warning at the decision (exit 0: returning nothing is allowed); a returned one is not", async () => {
    const file = script(
      "policy.ts",
      `import { defineScript } from "hookbox";
export default defineScript({ hooks: {
  beforeToolCall(p) {
    if (p.call.args.amount > 100) {
      const decision = { action: "deny" as const, reason: "over limit" };
    }
    const kept = { action: "deny" as const, reason: "kept" };
    if (p.call.name === "refund") return kept;
  },
  beforeRun(p) {
    const nested = () => ({ action: "deny" as const, reason: "in a helper" });
    if (p.prompt === "") return nested();
  },
} });
`,
    );
    const r = await runCli(["check", file]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/policy\.ts:5:13 - warning: beforeToolCall builds a decision \(decision\) and never returns it/),
    ]);
  });
});

describe("hookbox check: what run would refuse at load", () => {
  const typed = (body: string) => `import { defineScript } from "hookbox";\n${body}\n`;
  it.each([
    ["no default export", typed("export const policy = defineScript({ hooks: {} });"), "the script has no default export"],
    [
      "a tool schema the load refuses",
      typed(
        'export default defineScript({ tools: [{ name: "t", description: "d", parameters: { type: "object", properties: { a: { type: "string", pattern: "(?=x)" } } }, handler: () => 1 }] });',
      ),
      'tools[0] (t): parameters at #/properties/a/pattern: the pattern "(?=x)"',
    ],
    [
      "a throw while the script loads",
      typed('throw new Error("boom at load");\nexport default defineScript({ hooks: {} });'),
      "boom at load",
    ],
  ])("%s: exit 1 with run's own SCRIPT_LOAD message, though the types are clean", async (_what, text, message) => {
    const file = script("policy.ts", text);
    const r = await runCli(["check", file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^error SCRIPT_LOAD: \S*policy\.ts: /m);
    expect(r.stdout).toContain(message);
    expect(r.stdout).not.toMatch(/TS\d+/);
    const run = await runCli(["run", file, "--model", `scripted:${writeSteps([{ text: "hi" }])}`, "--prompt", "x"]);
    expect(run.stderr).toContain(message);
  });

  it("two scripts that load alone but not together (a tool name both define) are refused as run refuses them", async () => {
    const tool =
      'export default defineScript({ tools: [{ name: "lookup", description: "d", parameters: { type: "object" }, handler: () => 1 }] });';
    const dir = tempDir("hookbox-check-");
    writeFileSync(join(dir, "a.ts"), typed(tool));
    writeFileSync(join(dir, "b.ts"), typed(tool));
    const r = await runCli(["check", join(dir, "a.ts"), join(dir, "b.ts")]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^error \w+: .*lookup/m);
  });
});

describe("hookbox check: approvals and run hooks", () => {
  const RUN_HOOKS = `import { defineScript } from "hookbox";

export default defineScript({
  hooks: {
    beforeToolCall(p) { if (p.call.args.amount > 100) return { action: "ask", reason: "over 100", timeoutMs: 60000 }; },
    beforeRun(p) { return { action: "proceed", prompt: p.prompt.trim() + " " + p.userContext.originalUserRequest.length }; },
    beforeFinish(p) {
      if (p.continues < p.maxFinishContinues && !/A\\d+/.test(p.text)) return { action: "continue", message: "cite the order" };
      return p.iterations > 10 ? { action: "abort", reason: "too long" } : undefined;
    },
  },
});
`;

  it("accepts ask, beforeRun and beforeFinish returns (the real CLI, exit 0, no output)", async () => {
    const result = await runCli(["check", script("run-hooks.ts", RUN_HOOKS)]);
    expect(result.stdout + result.stderr).toBe("");
    expect(result.code).toBe(0);
  });

  it.each([
    ['{ action: "continue", message: "cite the order" }', '{ action: "continue" } /* WRONG */'],
    ['{ action: "ask", reason: "over 100", timeoutMs: 60000 }', '{ action: "ask", timeoutMs: 60000 } /* WRONG */'],
    [
      '{ action: "proceed", prompt: p.prompt.trim() + " " + p.userContext.originalUserRequest.length }',
      '{ action: "skip", result: 1 } /* WRONG */',
    ],
  ])("reports a return outside the contract at its own line: %s -> %s", async (good, bad) => {
    const text = RUN_HOOKS.replace(good, bad);
    const file = script("bad-run-hooks.ts", text);
    const result = await runCli(["check", file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${file}:${lineOf(text, "WRONG")}:`);
    expect(result.stdout.match(/ - error TS\d+/g), result.stdout).toHaveLength(1);
  });
});
