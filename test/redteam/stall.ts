import { appendFileSync } from "node:fs";
import { PERIOD_MS, startStallProbe } from "./stall-probe.mjs";

/** The bound every attack is held to: the host's own work never holds its event loop longer than this. */
export const MAX_STALL_MS = 100;

/**
 * The wall-clock bound: generous, because on a loaded 2-vCPU machine the wall clock also counts the time
 * the process waits for a CPU (seen: 1.2 s of wall for 70 ms of work at load average 23). It still fails
 * on the attacks' old stalls (seconds) and on anything that blocks without using CPU (a read of a FIFO).
 */
export const MAX_WALL_STALL_MS = 3000;

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

/**
 * Runs `work` in this process (the host) under the stall probe (stall-probe.mjs): any synchronous work on
 * the event loop (a regex, a compile, a parse) shows up as the probe timer's lateness, and as main-thread
 * CPU time inside the gap.
 */
export async function measureStall<T>(attack: string, work: () => Promise<T>): Promise<Measured<T>> {
  const probe = startStallProbe();
  const started = performance.now();
  try {
    const value = await work();
    const elapsedMs = performance.now() - started;
    // Two more periods, so a stall at the very end is seen too.
    await new Promise((resolve) => setTimeout(resolve, PERIOD_MS * 2));
    const figures = probe.read();
    report({ attack, where: "host process", ...figures, elapsedMs });
    return { value, ...figures, elapsedMs };
  } finally {
    probe.stop();
  }
}
