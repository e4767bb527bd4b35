import { defineScript } from "hookbox";

// Refunds up to 100 go through; larger ones wait for a person (approve, edit the amount, or reject);
// anything over 1000 is refused outright. A request nobody answers within 2 minutes is a rejection (the
// host's approval timeout, --approval-timeout-ms, caps this: a script can shorten the wait, never lengthen it).
const AUTO_LIMIT = 100;
const HARD_LIMIT = 1000;

export default defineScript({
  name: "refund-approval",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name !== "refund") return;
      const amount = Number(p.call.args.amount);
      if (amount > HARD_LIMIT) return { action: "deny", reason: `refunds over ${HARD_LIMIT} need a manager, not this agent` };
      if (amount > AUTO_LIMIT) {
        return { action: "ask", reason: `refund of ${amount} on order ${p.call.args.orderId} is over ${AUTO_LIMIT}`, timeoutMs: 120_000 };
      }
    },
    afterToolCall(p) {
      if (p.call.name === "refund" && !p.error) console.log(`refunded ${p.call.args.amount} on ${p.call.args.orderId}`);
    },
  },
});
