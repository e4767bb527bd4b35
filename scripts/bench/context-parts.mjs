// What making one run's context costs, part by part, in the isolate: `node scripts/bench/context-parts.mjs
// [--dist DIR ...]` (after `npm run build`) prints one JSON line per build. It makes contexts as the worker does
// (src/sandbox/worker/script-context.ts, with runtime-floor.mjs's bench policy as the bundle) and reads the isolate's
// CPU time (`isolate.cpuTime`) between the steps, microseconds per context:
// - create: createContextSync (V8's new context, isolated-vm's set-up);
// - runtime: running dist/runtime.js in it (the runtime's top-level code: primordials, its constants, the
//   ArrayBuffer stand-in, deleting the absent globals);
// - install: the install call (console, the hookbox module, the callbacks' state) and the dispatcher's reference;
// - bundle: running the script's bundle (its factory); register: the register call (the script's top-level code,
//   reading its definition);
// - total: all of the isolate's CPU per context over a block (the steps, releasing the context, collecting the
//   contexts dropped);
// - rest: total less the steps' medians: garbage collection (it runs inside whichever step allocates, so a step's
//   median leaves it out) and the release.
// Each build gets an isolate of its own; their blocks alternate (the machine is shared) and each key is the median
// over the blocks. Several `--dist` compare builds (A/B).
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BENCH_RUNTIME_LIMITS, LOOP_POLICY_FACTORY, isolateRuntimeSource } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const dists = process.argv.flatMap((argument, index) => (process.argv[index - 1] === "--dist" ? [resolve(argument)] : []));
if (dists.length === 0) dists.push(join(root, "dist"));

const CONTEXTS_PER_BLOCK = 20;
const BLOCKS = 40;
const WARM_UP_BLOCKS = 5;
const PARTS = ["create", "runtime", "install", "bundle", "register", "total"];

const builds = dists.map((dist) => {
  const ivm = createRequire(join(dist, "index.js"))("isolated-vm");
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  return {
    dist,
    ivm,
    isolate,
    runtime: isolate.compileScriptSync(isolateRuntimeSource(dist)),
    bundle: isolate.compileScriptSync(LOOP_POLICY_FACTORY),
    blocks: Object.fromEntries(PARTS.map((part) => [part, []])),
  };
});

/** One context made, registered and released; the isolate's CPU microseconds of each step. */
function makeOne(build, sums) {
  const { ivm, isolate } = build;
  const cpuUs = () => Number(isolate.cpuTime) / 1000;
  const t0 = cpuUs();
  const context = isolate.createContextSync();
  const t1 = cpuUs();
  const install = build.runtime.runSync(context, { reference: true });
  const t2 = cpuUs();
  const dispatch = install.applySync(undefined, [new ivm.Callback(() => {}), BENCH_RUNTIME_LIMITS], { result: { reference: true } });
  install.release();
  const t3 = cpuUs();
  const factory = build.bundle.runSync(context, { reference: true });
  const t4 = cpuUs();
  // As the worker registers a run's context (its callables, not its manifest).
  const registration = JSON.parse(dispatch.applySync(undefined, ["register", factory.derefInto(), true], { timeout: 1000 }));
  const t5 = cpuUs();
  if (!registration.ok) throw new Error(`the bench policy did not register: ${JSON.stringify(registration)}`);
  factory.release();
  dispatch.release();
  context.release();
  sums.create += t1 - t0;
  sums.runtime += t2 - t1;
  sums.install += t3 - t2;
  sums.bundle += t4 - t3;
  sums.register += t5 - t4;
}

function block(build) {
  const sums = { create: 0, runtime: 0, install: 0, bundle: 0, register: 0 };
  const started = Number(build.isolate.cpuTime) / 1000;
  for (let i = 0; i < CONTEXTS_PER_BLOCK; i++) makeOne(build, sums);
  return { ...sums, total: Number(build.isolate.cpuTime) / 1000 - started };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (let index = 0; index < WARM_UP_BLOCKS + BLOCKS; index++) {
  for (const build of builds) {
    const sums = block(build);
    if (index >= WARM_UP_BLOCKS) for (const part of PARTS) build.blocks[part].push(sums[part] / CONTEXTS_PER_BLOCK);
  }
}
for (const build of builds) {
  const medians = Object.fromEntries(PARTS.map((part) => [part, median(build.blocks[part])]));
  medians.rest = medians.total - (medians.create + medians.runtime + medians.install + medians.bundle + medians.register);
  const rounded = Object.fromEntries(Object.entries(medians).map(([part, us]) => [part, Math.round(us * 10) / 10]));
  console.log(JSON.stringify({ dist: build.dist, ...rounded }));
}
