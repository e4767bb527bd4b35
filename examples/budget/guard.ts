// A budget-aware policy: once half the run's money is spent, no more expensive searches; answer with what you have.
import { defineScript } from "hookbox";

const EXPENSIVE = new Set(["deep_search"]);

export default defineScript({
  name: "budget-guard",
  hooks: {
    beforeToolCall(p) {
      const { costUsd, maxCostUsd, tokensUsed, iteration } = p.budget;
      console.log(`inference ${iteration}: ${tokensUsed} tokens, $${costUsd.toFixed(2)} of $${maxCostUsd ?? "∞"} spent`);
      if (maxCostUsd !== undefined && EXPENSIVE.has(p.call.name) && costUsd > maxCostUsd / 2) {
        return {
          action: "deny",
          reason: `over half the budget is spent ($${costUsd.toFixed(2)} of $${maxCostUsd}): answer with what you have`,
        };
      }
      return undefined;
    },
  },
});
