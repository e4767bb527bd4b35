// Loaded into a real `hookbox serve` by the red-team tests (NODE_OPTIONS=--import=...): measures that
// process's own event-loop stall, as stall.ts does in-process. On SIGUSR2 it writes the worst figures
// since the last SIGUSR2, with a sequence number, to $HOOKBOX_LOOP_PROBE, and starts over.
import { writeFileSync } from "node:fs";

const file = process.env.HOOKBOX_LOOP_PROBE;
if (file && process.argv.includes("serve")) {
  const period = 5;
  const cpuMs = () => {
    const { user, system } = process.threadCpuUsage();
    return (user + system) / 1000;
  };
  let last = performance.now();
  let lastCpu = cpuMs();
  let stallMs = 0;
  let busyStallMs = 0;
  let seq = 0;
  const tick = () => {
    const now = performance.now();
    const cpu = cpuMs();
    stallMs = Math.max(stallMs, now - last - period);
    busyStallMs = Math.max(busyStallMs, Math.min(cpu - lastCpu, now - last));
    last = now;
    lastCpu = cpu;
  };
  setInterval(tick, period).unref();
  process.on("SIGUSR2", () => {
    tick();
    writeFileSync(file, JSON.stringify({ seq: ++seq, stallMs, busyStallMs }));
    stallMs = 0;
    busyStallMs = 0;
  });
}
