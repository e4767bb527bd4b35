// Trusted host tools. Searching the knowledge base enriches the context instead of returning a result.
export default [
  {
    name: "search_kb",
    description: "Search the support knowledge base and add the best article to the conversation",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    handler: (args) => ({
      type: "context_restart_kb_articles",
      enhanced_context_item: { query: args.query, article: "KB-112: duplicate charges are reversed by the bank within 3 days" },
    }),
  },
];
