import { describe, expect, it } from "vitest";
import { afterPayload, beforePayload, script, toolCtx } from "./helpers.js";
import { assertWorkerIntact, attacker, redTeamPool } from "./redteam-helpers.js";

/* Red team: escapes and pollution. Each case is a real script through the real sandbox. */
const { pool, good } = redTeamPool({ workers: 2 });

const skipWith = (expr: string) => `{ hooks: { beforeToolCall() { return { action: "skip", result: ${expr} }; } } }`;

describe("red team: escapes", () => {
  it("constructor chains reach only the isolate's own realm", async () => {
    const { run, tenant } = await attacker(
      pool,
      skipWith(`(() => {
        const F = ({}).constructor.constructor;
        const probe = F("return [typeof process, typeof require, typeof module, typeof __hookbox_runtime__, typeof __hookboxBootstrap, typeof __hookboxScript, typeof $0, typeof ivm]")();
        const viaError = (() => { try { null.x; } catch (e) { return e.constructor.constructor("return typeof process")(); } })();
        const viaAsync = (async () => {}).constructor("return 1").constructor.name;
        return { probe, viaError, viaAsync };
      })()`),
    );
    const decision = (await run.callHook("attack", "beforeToolCall", beforePayload())) as unknown as {
      result: { probe: string[]; viaError: string };
    };
    expect(decision.result.probe).toEqual(Array(8).fill("undefined"));
    expect(decision.result.viaError).toBe("undefined");
    await assertWorkerIntact(pool, tenant);
    await good.served();
  });

  it("Error.prepareStackTrace sees no runtime or host functions", async () => {
    const { run } = await attacker(
      pool,
      `{ hooks: { afterToolCall(p) {
        const seen = [];
        Error.prepareStackTrace = (error, frames) => {
          for (const frame of frames) seen.push({ file: frame.getFileName() ?? "", fn: typeof frame.getFunction(), self: typeof frame.getThis() });
          return "stack";
        };
        // Make the runtime build errors and stacks on our behalf: a getter that throws while the
        // runtime serializes the return value, and a next()-less rejection path.
        try { console.log({ get x() { throw new Error("from getter"); } }); } catch {}
        new Error("probe").stack;
        const runtimeFrames = seen.filter((f) => f.file.includes("hookbox-runtime"));
        return { result: { runtimeFunctions: runtimeFrames.filter((f) => f.fn !== "undefined").length, runtimeThis: runtimeFrames.filter((f) => f.self !== "undefined").length, files: [...new Set(seen.map((f) => f.file))] } };
      } } }`,
    );
    const decision = (await run.callHook("attack", "afterToolCall", afterPayload(1))) as unknown as {
      result: { runtimeFunctions: number; runtimeThis: number; files: string[] };
    };
    expect(decision.result.runtimeFunctions).toBe(0);
    expect(decision.result.runtimeThis).toBe(0);
    expect(decision.result.files.length).toBeGreaterThan(0); // the hook did see frames
    for (const file of decision.result.files) expect(file).not.toMatch(/\/work\/|node_modules|dist\//);
    await good.served();
  });

  it("host-callback walks find nothing: caller chains stop at the strict runtime", async () => {
    const { run } = await attacker(
      pool,
      `{ hooks: { beforeToolCall: function walk(p) {
        const found = [];
        let fn = walk;
        for (let i = 0; i < 10 && fn; i++) { try { fn = fn.caller; found.push(fn === null ? "null" : typeof fn); } catch (e) { found.push("throws"); break; } }
        let args = "none";
        try { args = typeof arguments.callee.caller; } catch { args = "throws"; }
        const globals = Object.getOwnPropertyNames(globalThis).filter((k) => /hookbox|ivm|host|dispatch|callback/i.test(k));
        return { action: "skip", result: { found, args, globals } };
      } } }`,
    );
    const decision = (await run.callHook("attack", "beforeToolCall", beforePayload())) as unknown as {
      result: { found: string[]; globals: string[] };
    };
    expect(decision.result.found[0]).toBe("null");
    expect(decision.result.globals).toEqual([]);
    await good.served();
  });

  it("errors that reach the script carry no host paths", async () => {
    const { run } = await attacker(
      pool,
      `{ middleware: [async function probe(turn, next) {
          let message = "", stack = "";
          try { await next({ id: "" }); } catch (e) { message = e.message; stack = String(e.stack); }
          let twice = "";
          try { await next(turn); await next(turn); } catch (e) { twice = e.message + " " + e.stack; }
          turn.metadata.seen = message + "|" + stack + "|" + twice;
          return turn;
        }] }`,
    );
    const out = await run.callMiddleware(
      "attack",
      "probe",
      { id: "t", blocks: [], metadata: {}, data: {} },
      toolCtx as never,
      async (turn) => turn,
    );
    const seen = String(out.metadata.seen);
    expect(seen).toContain("outside its contract");
    expect(seen).toContain("more than once");
    expect(seen).not.toMatch(/\/work\/|node_modules|\.ts:\d|dist\//);
  });

  it("SharedArrayBuffer, Atomics, WebAssembly and FinalizationRegistry are absent", async () => {
    const { run } = await attacker(
      pool,
      skipWith(`[typeof SharedArrayBuffer, typeof Atomics, typeof WebAssembly, typeof FinalizationRegistry]`),
    );
    const decision = (await run.callHook("attack", "beforeToolCall", beforePayload())) as unknown as { result: string[] };
    expect(decision.result).toEqual(["undefined", "undefined", "undefined", "undefined"]);
  });

  it("a number a run writes into anything its context can reach is not in the next run's context", async () => {
    // V8 shares a startup snapshot's boxed numbers (an object's double fields) between the contexts made from it,
    // so a writable number field of an object in the runtime's snapshot would carry a value from one run to the next.
    const walk = `const seen = new Set(); const paths = [];
      const visit = (o, path, depth) => {
        if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o) || depth > 8) return;
        seen.add(o);
        for (const key of Reflect.ownKeys(o)) {
          const d = Reflect.getOwnPropertyDescriptor(o, key);
          if (typeof key === "symbol" || d === undefined || !("value" in d)) continue;
          if (typeof d.value === "number" && d.writable) paths.push({ o, key, path: path + "." + key });
          visit(d.value, path + "." + key, depth + 1);
        }
        visit(Object.getPrototypeOf(o), path + ".__proto__", depth + 1);
      };
      visit(globalThis, "globalThis", 0); const exported = {}; for (const key of Object.keys(hookbox)) exported[key] = hookbox[key]; visit(exported, "hookbox", 0);`;
    const source = `import * as hookbox from "hookbox";
      export default { tools: [
        { name: "write", description: "", handler() { ${walk} for (const p of paths) { try { p.o[p.key] = 12345.678; } catch {} } return paths.map((p) => p.path); } },
        { name: "read", description: "", handler() { ${walk} return paths.filter((p) => p.o[p.key] === 12345.678).map((p) => p.path); } },
      ] };`;
    const tenant = "numbers-across-runs";
    const manifests = await pool.tenant(tenant).load([script("attack", source)]);
    const run = await pool.tenant(tenant).openRun({ runId: "numbers-run-1", scripts: manifests });
    const written = (await run.callTool("attack", "write", {}, toolCtx)) as string[];
    expect(written).toContain("globalThis.Error.stackTraceLimit");
    await run.close();
    const next = await pool.tenant(tenant).openRun({ runId: "numbers-run-2", scripts: manifests });
    expect(await next.callTool("attack", "read", {}, toolCtx)).toEqual([]);
    await next.close();
  });

  it("a context made from the runtime's snapshot keeps no global of the runtime's, in any run", async () => {
    // The worker takes the runtime's install from a global of the snapshot's context before the script's code runs.
    const { run, tenant, manifests } = await attacker(
      pool,
      skipWith(`Object.getOwnPropertyNames(globalThis).filter((name) => /hookbox|install/i.test(name))`),
    );
    const first = (await run.callHook("attack", "beforeToolCall", beforePayload())) as unknown as { result: string[] };
    expect(first.result).toEqual([]);
    const next = await pool.tenant(tenant).openRun({ runId: `second-run-${tenant}`, scripts: manifests });
    const second = (await next.callHook("attack", "beforeToolCall", beforePayload())) as unknown as { result: string[] };
    expect(second.result).toEqual([]);
    await next.close();
  });
});

describe("red team: prototype pollution", () => {
  const polluter = `{ tools: [{ name: "pollute", description: "", handler() {
      Object.prototype.polluted = "yes";
      Array.prototype.push = () => { throw new Error("push hijacked"); };
      Object.defineProperty(Array.prototype, "0", { set() { throw new Error("index setter hijacked"); }, configurable: true });
      JSON.stringify = () => "hijacked";
      JSON.parse = () => ({ hijacked: true });
      Promise.prototype.then = function () { throw new Error("then hijacked"); };
      Object.keys = () => [];
      globalThis.escaped = true;
      return { ok: true, list: [1, 2], nested: { a: "b" } };
    } }, { name: "inspect", description: "", handler(args) {
      return { polluted: ({}).polluted ?? null, stringify: JSON.stringify({ a: 1 }), escaped: globalThis.escaped ?? null, echo: args };
    } }] }`;

  it("a polluted context still returns correct JSON, and the pollution stays in that run", async () => {
    const { run, tenant, manifests } = await attacker(pool, polluter);
    expect(await run.callTool("attack", "pollute", {}, toolCtx)).toEqual({ ok: true, list: [1, 2], nested: { a: "b" } });
    // Same run, same context: the script sees its own pollution, the host still gets real JSON.
    expect(await run.callTool("attack", "inspect", { x: [1] }, toolCtx)).toEqual({
      polluted: "yes",
      stringify: "hijacked",
      escaped: true,
      echo: { x: [1] },
    });
    // A new run of the same tenant starts clean.
    const sandbox = pool.tenant(tenant);
    const fresh = await sandbox.openRun({ runId: "fresh", scripts: manifests });
    expect(await fresh.callTool("attack", "inspect", { x: 1 }, toolCtx)).toEqual({
      polluted: null,
      stringify: '{"a":1}',
      escaped: null,
      echo: { x: 1 },
    });
    await assertWorkerIntact(pool, tenant);
    await good.served();
  });

  it("one script cannot see another script's globals in the same run", async () => {
    const sandbox = pool.tenant("two-scripts");
    const manifests = await sandbox.load([
      script(
        "first",
        `export default { tools: [{ name: "set", description: "", handler() { globalThis.shared = "from first"; Object.prototype.polluted = 1; return true; } }] };`,
      ),
      script(
        "second",
        `export default { tools: [{ name: "get", description: "", handler() { return [globalThis.shared ?? null, ({}).polluted ?? null]; } }] };`,
      ),
    ]);
    const run = await sandbox.openRun({ runId: "r", scripts: manifests });
    expect(await run.callTool("first", "set", {}, toolCtx)).toBe(true);
    expect(await run.callTool("second", "get", {}, toolCtx)).toEqual([null, null]);
    await assertWorkerIntact(pool, "two-scripts");
  });
});
