// Trusted host tools for the cite-order example.
export default [
  {
    name: "lookup_order",
    description: "Look up an order by id",
    parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    handler: (args) => ({ id: args.id, status: "shipped", carrier: "DHL", eta: "tomorrow" }),
  },
];
