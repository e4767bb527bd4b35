// The model passes a one-line summary; the tool still files the user's whole, original request.
import { defineScript } from "hookbox";

export default defineScript({
  name: "support-ticket",
  tools: [
    {
      name: "file_ticket",
      description: "File a support ticket",
      parameters: { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] },
      async handler(args, ctx) {
        return {
          ticket: `T-${ctx.callId}`,
          summary: args.summary,
          originalRequest: ctx.userContext?.originalUserRequest ?? null,
          userId: ctx.userContext?.userId ?? null,
        };
      },
    },
  ],
  hooks: {
    beforeToolCall(p) {
      console.log(`${p.call.name} for user ${p.userContext?.userId ?? "?"}: the model summarised the request as "${p.call.args.summary}"`);
      return undefined;
    },
  },
});
