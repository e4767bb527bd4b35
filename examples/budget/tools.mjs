// Trusted host tools for the budget example.
export default [
  {
    name: "deep_search",
    description: "Search the whole knowledge base (slow and token-hungry)",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    handler: (args) => ({ query: args.query, hits: [`${args.query}: 3 articles, 40 pages`] }),
  },
];
