// Preloaded into `hookbox serve` by host-stall-server.mjs (node --import): the longest stretch of the main
// thread's own CPU time between two ticks of a 10 ms timer. A timer cannot fire while the event loop runs a
// task, so this is the host work that blocked the loop, measured in CPU time of the main thread alone: on a
// machine shared with other work it does not count the time the process waited for a CPU, which the
// wall-clock figures do. SIGUSR2 writes `stall-meter {...}` to stderr and starts a new window.
let last = process.threadCpuUsage();
let lastWall = performance.now();
let maxCpuMs = 0;
let maxWallMs = 0;
setInterval(() => {
  const now = process.threadCpuUsage();
  const wall = performance.now();
  maxCpuMs = Math.max(maxCpuMs, (now.user + now.system - last.user - last.system) / 1000);
  maxWallMs = Math.max(maxWallMs, wall - lastWall);
  last = now;
  lastWall = wall;
}, 10).unref();
process.on("SIGUSR2", () => {
  process.stderr.write(`stall-meter ${JSON.stringify({ maxCpuMs, maxWallMs })}\n`);
  maxCpuMs = 0;
  maxWallMs = 0;
});
