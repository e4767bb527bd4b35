// A tool that, instead of a result, asks the host to enrich the context and restart the loop.
import { defineScript } from "hookbox";

export default defineScript({
  name: "policy-docs",
  tools: [
    {
      name: "fetch_policy_docs",
      description: "Load the refund policy documents into the conversation",
      parameters: { type: "object", properties: {} },
      async handler() {
        return {
          type: "context_restart_policy_docs",
          enhanced_context_item: { title: "Refund policy v2", text: "Duplicate charges are refunded in full within 5 days." },
        };
      },
    },
  ],
});
