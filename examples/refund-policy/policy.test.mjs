// The refund policy's hooks called from node:test (`node --test examples/refund-policy/policy.test.mjs`), each in
// the real sandbox through hookbox/testing. The case file beside it (policy.cases.json) says the same in JSON.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { loadPolicy } from "hookbox/testing";

const policy = await loadPolicy(fileURLToPath(new URL("policy.ts", import.meta.url)));
after(() => policy.close());

test("refunds over 100 need a human", async () => {
  const decision = await policy.beforeToolCall({ tool: "refund", args: { orderId: "A17", amount: 160 } });
  assert.equal(decision?.action, "deny");
  assert.match(decision.reason, /over 100/);
});

test("a refund of 100 has no objection", async () => {
  assert.equal(await policy.beforeToolCall({ tool: "refund", args: { orderId: "A17", amount: 100 } }), undefined);
});

test("the payment gateway is retried twice", async () => {
  assert.deepEqual(await policy.onToolError({ tool: "refund", error: "down", attempt: 2 }), { action: "retry", backoffMs: 50 });
  assert.equal((await policy.onToolError({ tool: "refund", error: "down", attempt: 3 }))?.action, "fail");
});

test("card numbers are masked", async () => {
  const decision = await policy.afterToolCall({ tool: "get_customer", result: { card: "4111 1111 1111 1111" } });
  assert.deepEqual(decision?.result, { card: "**** 1111" });
});
