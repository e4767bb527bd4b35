import { defineScript } from "hookbox";

// A support answer must name the order it is about. If the model's final answer cites no order id, it is
// sent back once or twice with a reminder; if it still cites none, the run is aborted rather than
// delivering an answer nobody can check.
const ORDER_ID = /\b[A-Z]\d{2,}\b/;

export default defineScript({
  name: "cite-order",
  hooks: {
    beforeRun(p) {
      // The model gets the instruction up front; the user's own words stay in userContext.originalUserRequest.
      return { action: "proceed", prompt: `${p.prompt}\n\n(Always cite the order id in your answer.)` };
    },
    beforeFinish(p) {
      if (ORDER_ID.test(p.text)) return;
      if (p.continues >= p.maxFinishContinues) return { action: "abort", reason: "the answer still cites no order id" };
      return { action: "continue", message: "Your answer must cite the order id (for example A17). Please answer again." };
    },
  },
});
