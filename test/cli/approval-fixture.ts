import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import type { HookboxEvent } from "../../src/events/types.js";

/*
 * A refund tenant on disk for approval tests: `policy` asks for refunds over 100 (its timeoutMs from the
 * order's `askTimeoutMs`), `audit` (loaded after it) logs the arguments it sees, so a test can tell that the
 * later hooks ran with the approved arguments. The refund tool's schema caps amount at 1000.
 */
export function writeRefundFixture(steps: unknown[] = refundSteps()): { dir: string; args: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-approval-"));
  writeFileSync(
    join(dir, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) {
    if (p.call.name === "refund" && p.call.args.amount > 100)
      return { action: "ask", reason: "refund of " + p.call.args.amount + " is over 100", ...(p.call.args.askTimeoutMs ? { timeoutMs: p.call.args.askTimeoutMs } : {}) };
  },
} });
`,
  );
  writeFileSync(
    join(dir, "audit.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({ name: "audit", hooks: { beforeToolCall(p) { console.log("audit sees " + JSON.stringify(p.call.args)); } } });
`,
  );
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{
  name: "refund",
  description: "Refund an order",
  parameters: { type: "object", properties: { orderId: { type: "string" }, amount: { type: "number", maximum: 1000 }, askTimeoutMs: { type: "number" } }, required: ["orderId", "amount"] },
  handler: (args) => ({ refunded: args.amount, orderId: args.orderId }),
}];
`,
  );
  writeFileSync(join(dir, "model.json"), JSON.stringify({ steps }));
  return {
    dir,
    args: [
      join(dir, "policy.ts"),
      join(dir, "audit.ts"),
      "--model",
      `scripted:${join(dir, "model.json")}`,
      "--host-tools",
      join(dir, "tools.mjs"),
      "--prompt",
      "refund order A17",
    ],
  };
}

export function refundSteps(args: Record<string, unknown> = { orderId: "A17", amount: 250 }): unknown[] {
  return [{ toolCalls: [{ id: "c1", name: "refund", args }] }, { text: "done" }];
}

/** Calls `onEvent` for each JSON line the child prints, as it prints it. */
export function onJsonEvents(child: ChildProcessWithoutNullStreams, onEvent: (event: HookboxEvent) => void): void {
  let buffer = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    let end: number;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.trim()) onEvent(JSON.parse(line) as HookboxEvent);
    }
  });
}
