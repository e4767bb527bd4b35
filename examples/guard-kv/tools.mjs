// Trusted host tools (run in-process, not sandboxed).
export default [
  {
    name: "refund",
    description: "Refund an amount to a customer",
    parameters: {
      type: "object",
      properties: { customer: { type: "string" }, amount: { type: "number", exclusiveMinimum: 0 } },
      required: ["customer", "amount"],
    },
    handler: (args) => ({ customer: args.customer, refunded: args.amount }),
  },
];
