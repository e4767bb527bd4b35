import { basename } from "node:path";

/*
 * The tests `hookbox init` writes beside its example policy (docs/policy-tests.md): a case file `hookbox test` runs
 * and a node:test file through `hookbox/testing` (node --test needs no other package), both run by `npm test`.
 * Each case that depends on the policy's refund limit says so in its name, so changing the limit fails exactly
 * those.
 */

export const POLICY_CASES = {
  cases: [
    {
      name: "refunds over the limit (100) are denied",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { id: "A17", amount: 120 } },
      expect: { action: "deny", reason: "/over 100 need a human/" },
    },
    {
      name: "a refund at the limit (100) proceeds",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { id: "A17", amount: 100 } },
      expect: { action: "proceed" },
    },
    {
      name: "looking up an order proceeds",
      hook: "beforeToolCall",
      input: { tool: "lookup_order", args: { id: "A17" } },
      expect: { action: "proceed" },
    },
    {
      name: "a failing tool is retried twice, then given up",
      steps: [
        { hook: "onToolError", input: { tool: "refund", error: "gateway down", attempt: 1 }, expect: { action: "retry", backoffMs: 50 } },
        { hook: "onToolError", input: { tool: "refund", error: "gateway down", attempt: 3 }, expect: { action: "fail" } },
      ],
    },
    {
      name: "lookup_order says who asked",
      tool: "lookup_order",
      input: { args: { id: "A17" }, userContext: { userId: "u-42" } },
      expect: { result: { id: "A17", requestedBy: "u-42" } },
    },
    {
      name: "card numbers never reach the model",
      middleware: "redactCards",
      input: { messages: [{ role: "user", text: "refund A17 to 4111 1111 1111 1111" }] },
      expect: { texts: ["refund A17 to [card]"], calledNext: true },
    },
    {
      name: "the words after a card number stay as they were",
      middleware: "redactCards",
      input: { messages: [{ role: "user", text: "card 4111-1111-1111-1111 expired, use 5500 0000 0000 0004 please" }] },
      expect: { texts: ["card [card] expired, use [card] please"], calledNext: true },
    },
    {
      name: "the scripted run: no refund over the limit (100) ever starts",
      run: { prompt: "Please refund order A17, I was charged twice", model: "model.json" },
      expect: { status: "completed", events: [{ never: { type: "tool-started", name: "refund", args: { amount: { $gt: 100 } } } }] },
    },
  ],
};

export const POLICY_TEST = `// node --test (npm test): the policy's hooks called in the real sandbox through hookbox/testing.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { loadPolicy } from "hookbox/testing";

const policy = await loadPolicy(fileURLToPath(new URL("policy.ts", import.meta.url)));
after(() => policy.close());

test("refunds over the limit (100) need a human", async () => {
  const decision = await policy.beforeToolCall({ tool: "refund", args: { id: "A17", amount: 120 } });
  assert.equal(decision?.action, "deny");
});

test("smaller refunds have no objection", async () => {
  assert.equal(await policy.beforeToolCall({ tool: "refund", args: { id: "A17", amount: 20 } }), undefined);
});

test("card numbers are replaced before the model sees them", async () => {
  const passed = await policy.middleware("redactCards", { messages: [{ role: "user", text: "card 4111 1111 1111 1111 please" }] });
  assert.deepEqual(passed.texts, ["card [card] please"]);
});
`;

/** A package.json whose `npm test` runs both (hookbox from the project's node_modules, or one above it). */
export function packageJson(dir: string): string {
  const name =
    basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9._-]/g, "-")
      .replace(/^[._-]+/, "") || "hookbox-policy";
  return `${JSON.stringify({ name, private: true, type: "module", scripts: { test: "hookbox test && node --test" } }, null, 2)}\n`;
}
