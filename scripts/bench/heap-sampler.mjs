// Preloaded into `hookbox serve` by serve-allocations.mjs (`node --import`): V8's sampling heap profiler, started
// and stopped when the files `$HOOKBOX_HEAP_SAMPLES.start` and `.stop` appear, keeping the objects the garbage
// collector took meanwhile (what a run allocates, not only what survives). The profile is written to
// `$HOOKBOX_HEAP_SAMPLES`.
import { Session } from "node:inspector";
import { existsSync, writeFileSync } from "node:fs";

const out = process.env.HOOKBOX_HEAP_SAMPLES;
if (out) {
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
  let state = "waiting";
  setInterval(async () => {
    if (state === "waiting" && existsSync(`${out}.start`)) {
      state = "sampling";
      await post("HeapProfiler.enable");
      await post("HeapProfiler.startSampling", {
        samplingInterval: 2048,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    } else if (state === "sampling" && existsSync(`${out}.stop`)) {
      state = "done";
      const { profile } = await post("HeapProfiler.stopSampling");
      writeFileSync(out, JSON.stringify(profile));
    }
  }, 50).unref();
}
