// The in-isolate part of the loop bench's tool calls: `node scripts/bench/runtime-floor.mjs` (after `npm run build`)
// prints one JSON object. It runs dist/runtime.js in an isolated-vm isolate as the worker does (runtime first, then
// the bench's policy as a bundle factory, then `call` dispatches with the hook payloads the host sends), and
// counts the isolate's CPU time as isolated-vm reports it (`isolate.cpuTime`, what the worker charges a callback; no
// pipe, no frames, no Node-side worker code), or with `--process-cpu` the whole process's (all threads):
// - runtime_warm_context_us_per_call: two hooks (beforeToolCall, afterToolCall) in one context that lives on;
// - runtime_fresh_context_us_per_call: the same with a fresh context every 100 tool calls, as each run of the
//   bench gets (its 10 iterations of 10 calls), the context's making included;
// - context_us: making one context (context, runtime, install, bundle, register), part of the line above;
// - hook_bare_us_per_call: the two hooks alone, as plain functions in the isolate (loop-floor.mjs's bare child).
// The two shapes alternate in blocks, and each key is the median over the blocks (the machine is shared).
// `--dist DIR`: another build (A/B).
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BENCH_RUNTIME_LIMITS, LOOP_POLICY_FACTORY, isolateRuntimeSource, loopHookArgs } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const distArgument = process.argv.indexOf("--dist");
const dist = resolve(distArgument > 0 ? process.argv[distArgument + 1] : join(root, "dist"));
const ivm = createRequire(join(dist, "index.js"))("isolated-vm");

const CALLS_PER_RUN = 100;
const BLOCK_RUNS = 20;
const BLOCKS = 15;

const BARE = `(function (text, after) {
  const p = JSON.parse(text)[0];
  return JSON.stringify(after ? { result: { ...p.result, checked: true } } : p.call.args.n >= 0 ? { action: "proceed" } : { action: "deny", reason: "negative" });
})`;

const before = loopHookArgs("beforeToolCall");
const after = loopHookArgs("afterToolCall");

const runtimeSource = isolateRuntimeSource(dist);
const limits = BENCH_RUNTIME_LIMITS;
const isolate = new ivm.Isolate({ memoryLimit: 128 });
const runtime = isolate.compileScriptSync(runtimeSource);
const bundle = isolate.compileScriptSync(LOOP_POLICY_FACTORY);
const options = { timeout: 1000 };
let callId = 0;

function newContext() {
  const context = isolate.createContextSync();
  const install = runtime.runSync(context, { reference: true });
  const dispatch = install.applySync(undefined, [new ivm.Callback(() => {}), limits], { result: { reference: true } });
  install.release();
  const factory = bundle.runSync(context, { reference: true });
  // As the worker registers a run's context (its callables, not its manifest).
  const registration = JSON.parse(dispatch.applySync(undefined, ["register", factory.derefInto(), true], options));
  if (!registration.ok) throw new Error(`the bench policy did not register: ${JSON.stringify(registration)}`);
  factory.release();
  return { context, dispatch };
}

function toolCall(dispatch) {
  const first = dispatch.applySync(undefined, ["call", ++callId, "hook", "beforeToolCall", before], options);
  const second = dispatch.applySync(undefined, ["call", ++callId, "hook", "afterToolCall", after], options);
  if (first !== '+{"action":"proceed"}' || second !== '+{"result":{"n":3,"checked":true}}')
    throw new Error(`unexpected: ${first} ${second}`);
}

/** The isolate's CPU time as isolated-vm counts it (what the worker charges a callback), or this process's. */
const isolateUs = () => Number(isolate.cpuTime) / 1000;
const processUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
let cpuUs = isolateUs;
const warm = newContext();

/** Microseconds of isolate CPU per tool call, and per context made, over one block. */
function block(fresh) {
  let contextUs = 0;
  const started = cpuUs();
  for (let run = 0; run < BLOCK_RUNS; run++) {
    let made = warm;
    if (fresh) {
      const before = cpuUs();
      made = newContext();
      contextUs += cpuUs() - before;
    }
    for (let i = 0; i < CALLS_PER_RUN; i++) toolCall(made.dispatch);
    if (fresh) {
      made.dispatch.release();
      made.context.release();
    }
  }
  return { perCall: (cpuUs() - started) / (BLOCK_RUNS * CALLS_PER_RUN), perContext: contextUs / BLOCK_RUNS };
}

function bareBlock() {
  const context = isolate.createContextSync();
  const hook = context.evalSync(BARE, { reference: true });
  const started = cpuUs();
  for (let i = 0; i < BLOCK_RUNS * CALLS_PER_RUN; i++) {
    hook.applySync(undefined, [before, false], options);
    hook.applySync(undefined, [after, true], options);
  }
  const perCall = (cpuUs() - started) / (BLOCK_RUNS * CALLS_PER_RUN);
  hook.release();
  context.release();
  return perCall;
}

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
/** `--process-cpu`: count this process's CPU (all its threads, as loop-floor.mjs counts the workers') instead. */
if (process.argv.includes("--process-cpu")) cpuUs = processUs;
const round = (value) => Math.round(value * 10) / 10;
for (let i = 0; i < 3; i++) (block(false), block(true), bareBlock()); // warm-up: compiling, the code's tiers
const warmCalls = [];
const freshCalls = [];
const contexts = [];
const bare = [];
for (let i = 0; i < BLOCKS; i++) {
  warmCalls.push(block(false).perCall);
  const fresh = block(true);
  freshCalls.push(fresh.perCall);
  contexts.push(fresh.perContext);
  bare.push(bareBlock());
}
console.log(
  JSON.stringify({
    runtime_warm_context_us_per_call: round(median(warmCalls)),
    runtime_fresh_context_us_per_call: round(median(freshCalls)),
    context_us: round(median(contexts)),
    hook_bare_us_per_call: round(median(bare)),
  }),
);
