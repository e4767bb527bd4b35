// The event-loop stall probe shared by stall.ts (in the test process) and loop-probe.mjs (inside a real
// `hookbox serve`): a 5 ms interval timer whose lateness is the loop's stall, and the main thread's CPU
// time inside the longest gap, which is the part of the stall that is the process's own work (on a loaded
// machine the wall-clock lateness also counts time the process waited for a CPU).
export const PERIOD_MS = 5;

const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

export function startStallProbe() {
  let last = performance.now();
  let lastCpu = threadCpuMs();
  let stallMs = 0;
  let busyStallMs = 0;
  const tick = () => {
    const now = performance.now();
    const cpu = threadCpuMs();
    stallMs = Math.max(stallMs, now - last - PERIOD_MS);
    busyStallMs = Math.max(busyStallMs, Math.min(cpu - lastCpu, now - last));
    last = now;
    lastCpu = cpu;
  };
  const timer = setInterval(tick, PERIOD_MS);
  timer.unref();
  return {
    /** The worst figures since the start or the last reset, counting the gap up to now. */
    read() {
      tick();
      return { stallMs, busyStallMs };
    },
    reset() {
      stallMs = 0;
      busyStallMs = 0;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
