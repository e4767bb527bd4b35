// Runs every example through the real CLI (`hookbox run --json`) and checks its outcome.
import { spawn, spawnSync } from "node:child_process";
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
  {
    name: "refund-approval",
    args: [
      ex("refund-approval/approval.ts"),
      "--model",
      `scripted:${ex("refund-approval/model.json")}`,
      "--host-tools",
      ex("refund-approval/tools.mjs"),
      "--prompt",
      "Refund my orders A17 and B20, and C31 too",
    ],
    // Answered as a reviewer would on stdin: A17 approved at a lower amount, B20 rejected.
    answer(request) {
      if (request.callId === "c1") return { approve: request.pauseId, args: { orderId: "A17", amount: 200 } };
      return { reject: request.pauseId, reason: "B20 was already refunded" };
    },
    check(events) {
      const resolved = events.filter((e) => e.type === "approval.resolved");
      expect(events.filter((e) => e.type === "approval.requested").length === 2, "two refunds over 100 asked for approval");
      expect(
        resolved.some((e) => e.callId === "c1" && e.decision === "approved" && e.args.amount === 200),
        "A17 approved with the edited amount",
      );
      expect(
        resolved.some((e) => e.callId === "c2" && e.decision === "rejected"),
        "B20 rejected",
      );
      const refunds = events
        .filter((e) => e.type === "tool-finished" && e.name === "refund")
        .map((e) => e.result.orderId + ":" + e.result.refunded);
      expect(refunds.sort().join(",") === "A17:200,C31:40", "only the approved and the small refund ran");
      expect(events.at(-1).status === "completed", "run completed");
    },
  },
  {
    name: "cite-order",
    args: [
      ex("cite-order/cite.ts"),
      "--model",
      `scripted:${ex("cite-order/model.json")}`,
      "--host-tools",
      ex("cite-order/tools.mjs"),
      "--prompt",
      "Where is my order?",
    ],
    check(events) {
      const decisions = events.filter((e) => e.type === "hook-decision");
      expect(
        decisions.some((d) => d.hook === "beforeRun" && d.decision.prompt?.includes("cite the order id")),
        "beforeRun added the instruction",
      );
      expect(
        decisions.some((d) => d.hook === "beforeFinish" && d.decision.action === "continue"),
        "the answer without an order id was sent back",
      );
      expect(events.at(-1).status === "completed" && events.at(-1).text.includes("A17"), "the final answer cites A17");
    },
  },
  {
    name: "guard-kv",
    args: [
      ex("guard-kv/guard.ts"),
      "--model",
      `scripted:${ex("guard-kv/model.json")}`,
      "--guard-model",
      `scripted:${ex("guard-kv/guard-model.json")}`,
      "--host-tools",
      ex("guard-kv/tools.mjs"),
      "--prompt",
      "Process today's refund requests",
    ],
    check(events) {
      const guardCalls = events.filter((e) => e.type === "capability" && e.kind === "model");
      expect(guardCalls.length === 2 && guardCalls.every((e) => e.ok), "the guard model was asked once per customer");
      const decisions = events.filter((e) => e.type === "hook-decision" && e.script === "refund-guard");
      expect(decisions.find((d) => d.callId === "c2")?.decision.action === "deny", "the abusive request was denied");
      expect(decisions.find((d) => d.callId === "c3")?.decision.action === "deny", "the remembered verdict denied the repeat");
      expect(
        events.some((e) => e.type === "capability" && e.kind === "kv" && e.op === "get" && e.key === "verdict:bo" && e.ok),
        "the verdict was read from ctx.kv",
      );
      expect(
        events.some((e) => e.type === "tool-finished" && e.callId === "c1" && !e.error),
        "the fine refund ran",
      );
      expect(events.at(-1).status === "completed", "run completed");
    },
  },
];

let failures = 0;
function expect(ok, what) {
  if (!ok) throw new Error(what);
}

/** Runs the CLI; with `answer`, each approval request gets the stdin line it returns, as a reviewer's would. */
async function runExample(example) {
  const args = [join(root, "bin/hookbox.js"), "run", ...example.args, "--json"];
  if (!example.answer) return spawnSync(process.execPath, args, { encoding: "utf8" });
  const child = spawn(process.execPath, args);
  let stdout = "";
  let stderr = "";
  let scanned = 0;
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  child.stdout.setEncoding("utf8").on("data", (d) => {
    stdout += d;
    const complete = stdout.lastIndexOf("\n") + 1;
    for (const line of stdout.slice(scanned, complete).split("\n").filter(Boolean)) {
      const event = JSON.parse(line);
      if (event.type === "approval.requested") child.stdin.write(`${JSON.stringify(example.answer(event))}\n`);
    }
    scanned = complete;
  });
  const status = await new Promise((resolve) => child.on("close", resolve));
  return { stdout, stderr, status };
}

for (const example of examples) {
  const run = await runExample(example);
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
