// Runs every example through the real CLI (`hookbox run --json`) and checks its outcome.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const ex = (...p) => join(root, "examples", ...p);

const examples = [
  {
    name: "refund-policy",
    args: [
      ex("refund-policy/policy.ts"),
      "--model",
      `scripted:${ex("refund-policy/model.json")}`,
      "--host-tools",
      ex("refund-policy/tools.mjs"),
      "--prompt",
      "Please refund order A17, I was charged twice",
    ],
    check(events) {
      const decisions = events.filter((e) => e.type === "hook-decision");
      expect(
        decisions.some((d) => d.callId === "c1" && d.decision.action === "skip"),
        "lookup_order skipped with the cached record",
      );
      expect(
        decisions.some((d) => d.callId === "c3" && d.decision.action === "deny"),
        "refund over the limit denied",
      );
      expect(
        events.some((e) => e.type === "tool-retry" && e.callId === "c4"),
        "flaky refund retried",
      );
      expect(
        events.some((e) => e.type === "tool-finished" && e.callId === "c2" && !e.error),
        "get_customer ran",
      );
      const redacted = decisions.find((d) => d.callId === "c2" && d.hook === "afterToolCall");
      expect(
        redacted && JSON.stringify(redacted.decision).includes("**** 1111") && !JSON.stringify(redacted.decision).includes("4111 1111"),
        "card number redacted",
      );
      expect(events.at(-1).status === "completed", "run completed");
    },
  },
  {
    name: "user-context",
    args: [
      ex("user-context/ticket.ts"),
      "--model",
      `scripted:${ex("user-context/model.json")}`,
      "--host-tools",
      ex("user-context/tools.mjs"),
      "--user-context",
      '{"userId":"u-42"}',
      "--prompt",
      "I cannot log in since the password reset email never arrived, and my invoice is due tomorrow",
    ],
    check(events) {
      const ticket = events.find((e) => e.type === "tool-finished" && e.name === "file_ticket");
      expect(ticket?.result?.originalRequest?.includes("invoice is due tomorrow"), "the tool saw the full original request");
      expect(ticket?.result?.userId === "u-42", "the tool saw the user id");
      const account = events.find((e) => e.type === "tool-finished" && e.name === "lookup_account");
      expect(account?.result?.userId === "u-42", "the host tool saw the user context too");
      expect(
        events.some((e) => e.type === "log" && e.message.includes("login problem")),
        "the hook's console.log became a log event",
      );
      expect(events.at(-1).status === "completed", "run completed");
    },
  },
  {
    name: "context-restart",
    args: [
      ex("context-restart/docs.ts"),
      "--model",
      `scripted:${ex("context-restart/model.json")}`,
      "--host-tools",
      ex("context-restart/tools.mjs"),
      "--prompt",
      "Can I get my duplicate charge back?",
    ],
    check(events) {
      expect(
        events.some((e) => e.type === "context-restart" && e.restartType === "policy_docs" && e.applied) &&
          events.some((e) => e.type === "context-restart" && e.restartType === "kb_articles" && e.applied),
        "restart applied",
      );
      expect(events.at(-1).status === "completed", "run completed");
    },
  },
  {
    name: "budget",
    args: [
      ex("budget/guard.ts"),
      "--model",
      `scripted:${ex("budget/model.json")}`,
      "--host-tools",
      ex("budget/tools.mjs"),
      "--pricing",
      "scripted=3,15",
      "--max-cost-usd",
      "0.5",
      "--prompt",
      "Can I get my duplicate charge back?",
    ],
    check(events) {
      expect(
        events.some((e) => e.type === "tool-finished" && e.callId === "c1" && !e.error),
        "the first search ran",
      );
      expect(
        events.some((e) => e.type === "hook-decision" && e.callId === "c2" && e.decision.action === "deny"),
        "the guard denied a search once half the budget was spent",
      );
      const priced = events.filter((e) => e.type === "inference-finished").map((e) => e.usage?.costUsd);
      expect(priced.length === 4 && priced.every((cost) => Math.abs(cost - 0.15) < 1e-9), "each inference costs $0.15");
      const end = events.at(-1);
      expect(end.status === "failed" && end.errorCode === "BUDGET" && end.reason.includes("maxCostUsd"), "the run ended with BUDGET");
      expect(Math.abs(end.usage.costUsd - 0.6) < 1e-9 && end.usage.inputTokens === 160000, "run-finished carries the run's usage");
    },
  },
];

let failures = 0;
function expect(ok, what) {
  if (!ok) throw new Error(what);
}

for (const example of examples) {
  const run = spawnSync(process.execPath, [join(root, "bin/hookbox.js"), "run", ...example.args, "--json"], { encoding: "utf8" });
  try {
    const events = run.stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    example.check(events);
    console.log(`ok   ${example.name} (${events.length} events)`);
  } catch (error) {
    failures += 1;
    console.log(`FAIL ${example.name}: ${error.message}\n${run.stderr}`);
  }
}
console.log(`${examples.length - failures} passed, ${failures} failed`);
process.exitCode = failures ? 1 : 0;
