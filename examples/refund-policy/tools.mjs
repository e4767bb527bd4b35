// Trusted host tools (run in-process, not sandboxed): the default export is an array of tools.
let refundAttempts = 0;

export default [
  {
    name: "get_customer",
    description: "The customer record of an order",
    parameters: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] },
    handler: (args) => ({ orderId: args.orderId, name: "Dana Reyes", card: "4111 1111 1111 1111" }),
  },
  {
    name: "refund",
    description: "Refund an amount on an order",
    parameters: {
      type: "object",
      properties: { orderId: { type: "string" }, amount: { type: "number", exclusiveMinimum: 0 } },
      required: ["orderId", "amount"],
    },
    // A flaky payment gateway: the first attempt of every process times out.
    handler: (args) => {
      refundAttempts += 1;
      if (refundAttempts === 1) throw new Error("payment gateway timeout");
      return { orderId: args.orderId, refunded: args.amount, attempt: refundAttempts };
    },
  },
];
