// A refund policy a platform's customer might write. Every decision it makes shows up in the event stream.
import { defineScript } from "hookbox";

const REFUND_LIMIT = 100;

// Orders this policy already knows: looking them up again is skipped and the cached record is used.
const cachedOrders: Record<string, { id: string; total: number; timesCharged: number }> = {
  A17: { id: "A17", total: 80, timesCharged: 2 },
};

const CARD_NUMBER = /\b(?:\d[ -]?){12,15}(\d{4})\b/g;

export default defineScript({
  name: "refund-policy",
  onHookError: "fail-closed",
  middleware: [
    async function keepAnswersShort(turn, next) {
      const out = await next(turn);
      return out;
    },
  ],
  tools: [
    {
      name: "lookup_order",
      description: "Look up an order by id",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      async handler(args) {
        return { id: args.id, total: 0, timesCharged: 1, note: "not in the order system" };
      },
    },
  ],
  hooks: {
    beforeToolCall(p) {
      if (p.call.name === "refund" && Number(p.call.args.amount) > REFUND_LIMIT) {
        return { action: "deny", reason: `refunds over ${REFUND_LIMIT} need a human (asked for ${p.call.args.amount})` };
      }
      const cached = p.call.name === "lookup_order" ? cachedOrders[String(p.call.args.id)] : undefined;
      if (cached) return { action: "skip", result: cached, reason: "cached order record" };
      return undefined;
    },
    afterToolCall(p) {
      if (p.call.name !== "get_customer" || p.result === undefined) return undefined;
      // Card numbers never reach the model.
      return { result: JSON.parse(JSON.stringify(p.result).replace(CARD_NUMBER, "**** $1")) };
    },
    onToolError(p) {
      if (p.call.name !== "refund") return undefined;
      return p.attempt < 3 ? { action: "retry", backoffMs: 50 } : { action: "fail", error: "the payment gateway is down; try later" };
    },
  },
});
