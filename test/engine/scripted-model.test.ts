import { describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/engine/scripted.js";
import { modelFactory } from "../../src/engine/model-spec.js";
import { writeSteps } from "../helpers/harness.js";

const call = (text: string) => ({ prompt: [{ role: "user" as const, content: [{ type: "text" as const, text }] }] });

describe("the scripted model", () => {
  it("keeps the latest calls a test reads, not every prompt of a long run", async () => {
    const model = new ScriptedModel(Array.from({ length: 100 }, (_, i) => ({ text: `answer ${i}` })));
    for (let i = 0; i < 100; i++) await model.doGenerate(call(`question ${i}`));
    expect(model.callCount).toBe(100);
    expect(model.calls).toHaveLength(32);
    expect(model.calls[0].prompt).toEqual(call("question 68").prompt);
    expect(model.calls.at(-1)!.prompt).toEqual(call("question 99").prompt);
  });

  it("a scripted: model spec keeps no call at all", async () => {
    const model = modelFactory({ kind: "scripted", file: writeSteps([{ text: "a" }, { text: "b" }]) })(0) as ScriptedModel;
    await model.doGenerate(call("one"));
    await model.doGenerate(call("two"));
    expect(model.callCount).toBe(2);
    expect(model.calls).toEqual([]);
  });
});
