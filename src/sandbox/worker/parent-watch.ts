import { Worker } from "node:worker_threads";

/*
 * The worker must die with its supervisor however the supervisor dies (SIGKILL included). The frame pipe's
 * end tells the event loop (main.ts); the main thread may be stuck inside guest code, though, so a
 * separate thread polls the parent pid and kills this process when it changes (the child was re-parented).
 */
const WATCH_SOURCE = `
const { workerData } = require("node:worker_threads");
setInterval(() => {
  if (process.ppid !== workerData.parentPid) process.kill(workerData.selfPid, "SIGKILL");
}, workerData.intervalMs);
`;

export function watchParent(intervalMs = 200): void {
  // Inside the second wall, Node's permission model allows no threads: bwrap's --die-with-parent ties this
  // process to the host instead (and its parent is the sandbox's init, not the host).
  if (process.permission?.has("worker") === false) return;
  const watcher = new Worker(WATCH_SOURCE, {
    eval: true,
    workerData: { parentPid: process.ppid, selfPid: process.pid, intervalMs },
    resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
  });
  watcher.unref();
}
