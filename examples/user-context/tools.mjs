// Trusted host tools. A host tool reads the same user context from its ctx (or from currentRunContext()
// when it calls deeper host code) as a sandboxed tool does.
export default [
  {
    name: "lookup_account",
    description: "The account of the user making the request",
    parameters: { type: "object", properties: {} },
    handler: (_args, ctx) => ({ userId: ctx.userContext?.userId ?? null, plan: "pro", openTickets: 1 }),
  },
];
