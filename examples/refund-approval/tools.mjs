// Trusted host tools for the refund-approval example.
export default [
  {
    name: "refund",
    description: "Refund part or all of an order",
    parameters: {
      type: "object",
      properties: { orderId: { type: "string", pattern: "^[A-Z][0-9]+$" }, amount: { type: "number", exclusiveMinimum: 0, maximum: 5000 } },
      required: ["orderId", "amount"],
      additionalProperties: false,
    },
    handler: (args) => ({ orderId: args.orderId, refunded: args.amount, status: "issued" }),
  },
];
