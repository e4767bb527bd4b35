import type { HookboxEvent, EventBody } from "../../src/events/types.js";
import type { RunHandle, RunResult, AnswerResult, StartRunRequest, TenantRuntime } from "../../src/host/types.js";
import type { Turn } from "../../src/turns/turn.js";

/*
 * A stand-in for the real tool loop, for unit tests of the session layer only: it follows the
 * persistence protocol (events in seq order, snapshots awaited between phases, journal consulted before
 * a tool runs) over a scripted list of steps. The end-to-end tests use the real runtime.
 */
export interface FakeStep {
  toolCalls?: { id: string; name: string; args?: Record<string, string> }[];
  text?: string;
  usage?: { inputTokens: number; outputTokens: number; costUsd: number };
}

export class FakeRuntime implements TenantRuntime {
  readonly requests: StartRunRequest[] = [];
  readonly executed: string[] = [];
  readonly beforeToolCall: string[] = [];
  /** Tools named here wait until released (to interrupt a run mid-tool). */
  readonly blockedTools = new Map<string, Promise<void>>();

  constructor(
    readonly name: string,
    private readonly steps: FakeStep[],
  ) {}

  start(request: StartRunRequest): RunHandle {
    this.requests.push(request);
    return new FakeRun(this, this.steps, request);
  }
}

class FakeRun implements RunHandle {
  readonly runId: string;
  readonly sessionId: string;
  readonly inferenceId: string;
  private seq: number;
  private readonly log: HookboxEvent[] = [];
  private cancelled: string | undefined;
  private pause: { id: string; resolve: () => void } | undefined;
  private readonly result: Promise<RunResult>;

  constructor(
    private readonly runtime: FakeRuntime,
    private readonly steps: FakeStep[],
    private readonly request: StartRunRequest,
  ) {
    this.runId = request.runId ?? "fake-run";
    this.sessionId = request.sessionId;
    this.inferenceId = request.resumeFrom?.inferenceId ?? `inf-${this.runId}`;
    this.seq = request.resumeFrom?.nextSeq ?? 1;
    this.result = this.main();
  }

  private emit(body: EventBody): void {
    const event = {
      ...body,
      seq: this.seq++,
      timestampMs: Date.now(),
      sessionId: this.sessionId,
      inferenceId: this.inferenceId,
    } as HookboxEvent;
    this.log.push(event);
    this.request.persistence?.onEvent(event);
  }

  private async main(): Promise<RunResult> {
    const persistence = this.request.persistence;
    let iterations = this.request.resumeFrom?.iterations ?? 0;
    let turn: Turn;
    if (this.request.resumeFrom) {
      turn = structuredClone(this.request.resumeFrom.turn);
    } else {
      const history = this.request.history ?? { id: `turn-${this.runId}`, blocks: [], metadata: {}, data: {} };
      turn = {
        ...structuredClone(history),
        blocks: [...history.blocks, { id: `u-${this.runId}`, kind: "user", payload: { text: this.request.prompt }, metadata: {} }],
      };
      this.emit({ type: "run-started", prompt: this.request.prompt, runId: this.runId });
      await persistence?.onSnapshot("pre_inference", turn);
    }
    const finish = async (status: RunResult["status"], text?: string): Promise<RunResult> => {
      if (status === "completed") await persistence?.onSnapshot("final", turn);
      this.emit({ type: "run-finished", status, iterations, ...(text ? { text } : {}) });
      return { status, turn, iterations, ...(text ? { text } : {}) };
    };
    // Resuming after tools ran: the calls of the last inference still lacking a result are pending.
    let pending = turn.blocks.filter(
      (b) => b.kind === "tool_call" && !turn.blocks.some((u) => u.kind === "tool_use" && u.payload.id === b.payload.id),
    );
    for (;;) {
      if (this.cancelled) return finish("cancelled");
      if (pending.length === 0) {
        const step = this.steps[iterations];
        if (!step) return finish("failed");
        iterations += 1;
        this.emit({ type: "inference-started", iteration: iterations });
        const calls = step.toolCalls ?? [];
        this.emit({
          type: "inference-finished",
          iteration: iterations,
          ...(step.text ? { text: step.text } : {}),
          toolCalls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args ?? {} })),
          ...(step.usage ? { usage: step.usage } : {}),
        });
        for (const call of calls)
          turn.blocks.push({
            id: `tc-${call.id}`,
            kind: "tool_call",
            payload: { id: call.id, name: call.name, args: call.args ?? {} },
            metadata: {},
          });
        if (step.text) turn.blocks.push({ id: `t-${iterations}`, kind: "llm_text", payload: { text: step.text }, metadata: {} });
        await persistence?.onSnapshot("post_inference", turn);
        if (calls.length === 0) return finish("completed", step.text);
        pending = turn.blocks.filter((b) => b.kind === "tool_call" && calls.some((c) => c.id === b.payload.id));
        if (this.request.options?.step) {
          const pauseId = `p-${this.runId}-${iterations}`;
          const continued = new Promise<void>((resolve) => (this.pause = { id: pauseId, resolve }));
          this.emit({ type: "debugger.pause", pauseId, phase: "after_inference", deadlineMs: Date.now() + 30_000, pendingToolCalls: [] });
          await continued;
          if (this.cancelled) return finish("cancelled");
          this.emit({ type: "debugger.continue", pauseId, reason: "continued" });
        }
      }
      for (const call of pending) {
        const id = String(call.payload.id);
        const committed = persistence?.journal?.lookup(id);
        if (committed) {
          turn.blocks.push(committed);
          continue;
        }
        this.runtime.beforeToolCall.push(id);
        this.emit({ type: "tool-started", callId: id, name: String(call.payload.name), args: {}, attempt: 1, origin: "host" });
        await this.runtime.blockedTools.get(id);
        if (this.cancelled) return finish("cancelled");
        this.runtime.executed.push(id);
        const block = { id: `tu-${id}`, kind: "tool_use" as const, payload: { id, result: `ran ${id}` }, metadata: {} };
        await persistence?.journal?.record(id, block);
        turn.blocks.push(block);
        this.emit({ type: "tool-finished", callId: id, name: String(call.payload.name), attempt: 1, durationMs: 0, result: `ran ${id}` });
      }
      pending = [];
      await persistence?.onSnapshot("post_tools", turn);
    }
  }

  async *events(fromSeq = 1): AsyncIterable<HookboxEvent> {
    await this.result;
    yield* this.log.filter((e) => e.seq >= fromSeq);
  }

  wait(): Promise<RunResult> {
    return this.result;
  }

  cancel(reason = "cancelled"): void {
    this.cancelled = reason;
    this.pause?.resolve();
  }

  readonly openApprovals = [];

  answerApproval(pauseId: string): AnswerResult {
    return { ok: false, code: "NOT_FOUND", message: `no open approval ${pauseId} in this run` };
  }

  continue(pauseId: string): boolean {
    if (this.pause?.id !== pauseId) return false;
    this.pause.resolve();
    this.pause = undefined;
    return true;
  }
}
