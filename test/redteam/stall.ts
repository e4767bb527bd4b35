import { appendFileSync } from "node:fs";

/** The bound every attack is held to: the host's event loop never waits longer than this on one. */
export const MAX_STALL_MS = 100;

export interface Measured<T> {
  value: T;
  /** Longest the host's event loop was kept from turning (wall-clock drift of a 5 ms interval timer). */
  stallMs: number;
  /**
   * CPU time the host's main thread spent inside that longest gap: the part of the stall that is the
   * host's own work. On a loaded machine the wall-clock drift also counts time the process was not
   * scheduled at all, which no code of ours causes; this figure does not.
   */
  busyStallMs: number;
  /** How long the attack took to be refused or to finish. */
  elapsedMs: number;
}

export interface StallFigure {
  attack: string;
  where: string;
  stallMs: number;
  busyStallMs?: number;
  elapsedMs: number;
}

/**
 * Figures for BENCHMARKS.md: with HOOKBOX_STALL_REPORT=FILE (scripts/bench/host-stall.mjs sets it), each
 * measurement is appended to FILE as one JSON line.
 */
export function report(figure: StallFigure): void {
  const file = process.env.HOOKBOX_STALL_REPORT;
  if (file) appendFileSync(file, JSON.stringify(figure) + "\n");
}

const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

/**
 * Runs `work` in this process (the host) while a 5 ms interval timer measures how late it fires: any
 * synchronous work on the event loop (a regex, a compile, a parse) shows up as that timer's drift, and as
 * main-thread CPU time inside the gap.
 */
export async function measureStall<T>(attack: string, work: () => Promise<T>): Promise<Measured<T>> {
  const period = 5;
  let last = performance.now();
  let lastCpu = threadCpuMs();
  let stallMs = 0;
  let busyStallMs = 0;
  const tick = () => {
    const now = performance.now();
    const cpu = threadCpuMs();
    stallMs = Math.max(stallMs, now - last - period);
    busyStallMs = Math.max(busyStallMs, Math.min(cpu - lastCpu, now - last));
    last = now;
    lastCpu = cpu;
  };
  const probe = setInterval(tick, period);
  const started = performance.now();
  try {
    const value = await work();
    const elapsedMs = performance.now() - started;
    // One more tick, so a stall at the very end is seen too.
    await new Promise((resolve) => setTimeout(resolve, period * 2));
    tick();
    report({ attack, where: "host process", stallMs, busyStallMs, elapsedMs });
    return { value, stallMs, busyStallMs, elapsedMs };
  } finally {
    clearInterval(probe);
  }
}
