import { describe, expect, it } from "vitest";
import { harness, ofType } from "../helpers/harness.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { RunHandle } from "../../src/host/types.js";

const echo = (log: unknown[] = []): HostTool => ({
  name: "echo",
  description: "",
  parameters: { type: "object" },
  handler: (args) => {
    log.push(args);
    return args;
  },
});
/** Ten minutes: far past the test's own timeout. */
const LONGER_THAN_THE_TEST = 600_000;
const steps = [{ toolCalls: [{ id: "c1", name: "echo", args: { n: 1 } }] }, { text: "done" }];

async function nextPause(handle: RunHandle, seen: HookboxEvent[]): Promise<Extract<HookboxEvent, { type: "debugger.pause" }>> {
  for await (const event of handle.events(seen.length + 1)) {
    seen.push(event);
    if (event.type === "debugger.pause") return event;
    if (event.type === "run-finished") throw new Error("finished without pausing");
  }
  throw new Error("no pause");
}

describe("step control", () => {
  it("pauses after inference with pending calls and after tools; continues by id", async () => {
    const log: unknown[] = [];
    const h = await harness({ steps, host: { tools: [echo(log)] } });
    const handle = h.runtime.start({ sessionId: "s", prompt: "x", options: { step: true } });
    const seen: HookboxEvent[] = [];
    const first = await nextPause(handle, seen);
    expect(first.phase).toBe("after_inference");
    expect(first.pendingToolCalls).toEqual([{ id: "c1", name: "echo", args: { n: 1 } }]);
    expect(log).toHaveLength(0); // nothing ran while paused
    expect(handle.continue("pause_not-this-one")).toBe(false);
    expect(handle.continue(first.pauseId)).toBe(true);
    const second = await nextPause(handle, seen);
    expect(second.phase).toBe("after_tools");
    expect(log).toHaveLength(1);
    expect(handle.continue(second.pauseId)).toBe(true);
    const result = await handle.wait();
    expect(result.status).toBe("completed");
    const continues = ofType(await collect(handle), "debugger.continue");
    expect(continues.map((c) => c.reason)).toEqual(["continued", "continued"]);
  });

  it("does not pause after an inference without tool calls", async () => {
    const h = await harness({ steps: [{ text: "just text" }] });
    const { result, events } = await h.run("x", { step: true });
    expect(result.status).toBe("completed");
    expect(ofType(events, "debugger.pause")).toHaveLength(0);
  });

  it("auto-continues when the pause times out", async () => {
    const h = await harness({ steps, host: { tools: [echo()] } });
    const { result, events } = await h.run("x", { step: true, pauseTimeoutMs: 30 });
    expect(result.status).toBe("completed");
    expect(ofType(events, "debugger.continue").map((c) => c.reason)).toEqual(["timeout", "timeout"]);
  });

  // "At once" below: each run waits on something that would outlast the test (a 10-minute pause, a tool that
  // never answers, a 10-minute model call or backoff), so only the cancellation can end it in time; how fast a
  // cancel is belongs to `npm run bench`, not to a timed assertion a loaded machine could break.
  it("cancel during a pause ends the run at once", async () => {
    const h = await harness({ steps, host: { tools: [echo()] } });
    const handle = h.runtime.start({ sessionId: "s", prompt: "x", options: { step: true, pauseTimeoutMs: LONGER_THAN_THE_TEST } });
    await nextPause(handle, []);
    handle.cancel("user pressed stop");
    const result = await handle.wait();
    expect(result.status).toBe("cancelled");
    const events = await collect(handle);
    expect(ofType(events, "debugger.continue")[0].reason).toBe("cancelled");
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "cancelled" });
  });

  it("a continue issued from the event sink the moment the pause is emitted works", async () => {
    let handle: RunHandle | undefined;
    const h = await harness({ steps, host: { tools: [echo()] } });
    handle = h.runtime.start({
      sessionId: "s",
      prompt: "x",
      options: { step: true, pauseTimeoutMs: 60_000 },
      persistence: {
        onSnapshot() {},
        onEvent: (e) => {
          if (e.type === "debugger.pause") queueMicrotask(() => handle!.continue(e.pauseId));
        },
      },
    });
    const result = await handle.wait();
    expect(result.status).toBe("completed");
  });

  it("cancel during a running tool aborts the tool's signal and ends the run at once", async () => {
    let toolSawAbort = false;
    const slow: HostTool = {
      name: "slow",
      description: "",
      parameters: { type: "object" },
      handler: (_args, _ctx, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            toolSawAbort = true;
            reject(new Error("aborted"));
          });
        }),
    };
    const h = await harness({ steps: [{ toolCalls: [{ id: "t", name: "slow", args: {} }] }, { text: "never" }], host: { tools: [slow] } });
    const handle = h.runtime.start({ sessionId: "s", prompt: "x" });
    for await (const e of handle.events()) if (e.type === "tool-started") break;
    handle.cancel("stop");
    const result = await handle.wait();
    expect(result.status).toBe("cancelled");
    expect(toolSawAbort).toBe(true);
    const events = await collect(handle);
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "cancelled" });
  });

  it("cancel during a long model call and during a retry backoff returns promptly", async () => {
    const h = await harness({ steps: [{ text: "slow", delayMs: LONGER_THAN_THE_TEST }] });
    const handle = h.runtime.start({ sessionId: "s", prompt: "x" });
    for await (const e of handle.events()) if (e.type === "inference-started") break;
    handle.cancel();
    expect((await handle.wait()).status).toBe("cancelled");

    const flaky: HostTool = {
      name: "flaky",
      description: "",
      parameters: { type: "object" },
      handler: () => {
        throw new Error("nope");
      },
    };
    const h2 = await harness({
      steps: [{ toolCalls: [{ id: "f", name: "flaky", args: {} }] }, { text: "x" }],
      host: { tools: [flaky], hooks: [{ name: "retrier", onToolError: () => ({ action: "retry", backoffMs: LONGER_THAN_THE_TEST }) }] },
      defaults: { retry: { budgetMs: 2 * LONGER_THAN_THE_TEST } },
    });
    const handle2 = h2.runtime.start({ sessionId: "s", prompt: "x" });
    for await (const e of handle2.events()) if (e.type === "tool-retry") break;
    handle2.cancel();
    expect((await handle2.wait()).status).toBe("cancelled");
  });
});

async function collect(handle: RunHandle): Promise<HookboxEvent[]> {
  const all: HookboxEvent[] = [];
  for await (const e of handle.events()) all.push(e);
  return all;
}
