import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tmp, writeSteps } from "../helpers/harness.js";
import { openStore } from "../../src/store/index.js";

/*
 * The human transcript says what each hook did: a rewrite names the new arguments, a proceed is a proceed, a
 * result handed back unchanged says so, and an afterToolCall that returns a result on a failed call without
 * `error: null` leaves the call failed (the contract in docs/script-api.md), which the transcript and the model
 * both show.
 */
function fixture() {
  const dir = tmp("hookbox-transcript-");
  writeFileSync(
    join(dir, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) {
    if (p.call.name === "echo" && p.call.args.text === "a") return { action: "proceed", args: { text: "b" } };
    return { action: "proceed" };
  },
  afterToolCall(p) {
    if (p.call.name === "echo") return { result: p.result };
    if (p.call.id === "c2") return { result: "ignored" };
    return { result: { recovered: true }, error: null };
  },
} });
`,
  );
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [
  { name: "echo", description: "echo", parameters: { type: "object", properties: { text: { type: "string" } } }, handler: (args) => ({ echoed: args.text }) },
  { name: "boom", description: "fails", parameters: { type: "object" }, handler: () => { throw new Error("kaput"); } },
];
`,
  );
  const model = writeSteps([
    { toolCalls: [{ id: "c1", name: "echo", args: { text: "a" } }] },
    { toolCalls: [{ id: "c2", name: "boom", args: {} }] },
    { toolCalls: [{ id: "c3", name: "boom", args: {} }] },
    { text: "done" },
  ]);
  return { dir, args: ["run", join(dir, "policy.ts"), "--model", `scripted:${model}`, "--host-tools", join(dir, "tools.mjs")] };
}

describe("hookbox run: the transcript says what each hook did", () => {
  it("rewrite vs proceed, unchanged result vs rewrite, a failure kept vs cleared; the model sees the same", async () => {
    const { dir, args } = fixture();
    const store = join(dir, "store.db");
    const r = await runCli([...args, "--prompt", "go", "--store", store, "--session", "s1"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n").filter((line) => line.includes("policy."));
    expect(lines).toEqual([
      '    policy.beforeToolCall → rewrite: args now {"text":"b"} [c1]',
      "    policy.afterToolCall → result unchanged [c1]",
      "    policy.beforeToolCall → proceed [c2]",
      "    policy.afterToolCall → the call stays failed (kaput): a result without error: null does not clear the error [c2]",
      "    policy.beforeToolCall → proceed [c3]",
      '    policy.afterToolCall → error cleared: the model sees {"recovered":true} [c3]',
    ]);
    const db = openStore(store);
    try {
      const [run] = await db.listRuns("s1");
      const final = (await db.listSnapshots(run.id)).at(-1)!;
      const uses = final.turn.blocks.filter((block) => block.kind === "tool_use").map((block) => block.payload);
      expect(uses).toEqual([
        { id: "c1", name: "echo", result: { echoed: "b" } },
        { id: "c2", name: "boom", error: { message: "kaput", code: "TOOL_ERROR" } },
        { id: "c3", name: "boom", result: { recovered: true } },
      ]);
    } finally {
      await db.close();
    }
  });
});
