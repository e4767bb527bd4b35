// Asks a guard model whether a refund request looks abusive, and remembers its verdict per customer in the
// tenant's key-value store: the next refund for the same customer (in this run or a later one) skips the
// guard call. Run with `--guard-model scripted:guard-model.json` (and `--store FILE` to keep the verdicts).
import { defineScript } from "hookbox";

const DAY_MS = 24 * 60 * 60 * 1000;

export default defineScript({
  name: "refund-guard",
  onHookError: "fail-closed",
  hooks: {
    async beforeToolCall(p) {
      if (p.call.name !== "refund") return undefined;
      const customer = String(p.call.args.customer);
      const key = `verdict:${customer}`;
      let verdict = (await p.kv.get(key)) as string | null;
      if (verdict === null) {
        const answer = await p.model.generate({
          messages: [
            { role: "system", content: "You review refund requests. Answer ABUSIVE or OK, then a short reason." },
            { role: "user", content: JSON.stringify(p.call.args) },
          ],
          maxTokens: 50,
        });
        verdict = answer.text.trim().toUpperCase().startsWith("ABUSIVE") ? "abusive" : "ok";
        await p.kv.set(key, verdict, { ttlMs: DAY_MS });
        console.log(`guard says ${verdict} for ${customer} (${answer.usage.inputTokens + answer.usage.outputTokens} tokens)`);
      }
      if (verdict === "abusive") return { action: "deny", reason: `refunds for ${customer} are on hold: the guard flagged them` };
      return undefined;
    },
  },
});
