import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { atEndOfTurn } from "../../src/session/end-of-turn.js";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("atEndOfTurn", () => {
  it("runs what was put off at the end of the turn, in the order it was put off, with the other Immediates", async () => {
    const order: string[] = [];
    atEndOfTurn(() => order.push("first"));
    setImmediate(() => order.push("an Immediate of its own"));
    atEndOfTurn(() => order.push("second"));
    queueMicrotask(() => order.push("a microtask"));
    expect(order).toEqual([]);
    await turn();
    // Both ran where the first one's Immediate stood: before the Immediate set between them.
    expect(order).toEqual(["a microtask", "first", "second", "an Immediate of its own"]);
  });

  it("runs what is put off while it runs at the end of the next turn", async () => {
    const order: string[] = [];
    atEndOfTurn(() => {
      order.push("this turn");
      atEndOfTurn(() => order.push("next turn"));
      setImmediate(() => order.push("an Immediate set meanwhile"));
    });
    await turn();
    expect(order).toEqual(["this turn"]);
    await turn();
    expect(order).toEqual(["this turn", "next turn", "an Immediate set meanwhile"]);
  });

  it("runs the others when one throws, and throws its error as an Immediate of its own would", () => {
    // In a process of its own: the error is uncaught there, as a throwing Immediate's is.
    const module = fileURLToPath(new URL("../../src/session/end-of-turn.ts", import.meta.url));
    const script = `
      import { atEndOfTurn } from ${JSON.stringify(module)};
      process.on("uncaughtException", (error) => console.log("uncaught: " + error.message));
      atEndOfTurn(() => console.log("before"));
      atEndOfTurn(() => { throw new Error("a writer's bug"); });
      atEndOfTurn(() => console.log("after"));
    `;
    const output = execFileSync(process.execPath, ["--no-warnings", "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(output.trim().split("\n")).toEqual(["before", "after", "uncaught: a writer's bug"]);
  });
});
