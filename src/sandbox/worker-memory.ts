import { readFileSync } from "node:fs";
import { processTree } from "./wall/process-tree.js";

/*
 * A worker's memory as the host measures it: the resident set of every process in the tree the host
 * started (inside the wall: bwrap, the sandbox's init, the Node worker, and anything native code there
 * started), read from /proc. What the worker says of itself is never used: after a V8 escape it says
 * what the attacker likes.
 */

/**
 * Processes a worker's tree may hold. A walled worker is three (bwrap, the sandbox's init, Node), a plain
 * one is one; a tree that reaches this is not ours to measure any more, and the worker is killed.
 */
export const MAX_WORKER_PROCESSES = 16;

export interface MemorySample {
  bytes: number;
  /** Processes counted (MAX_WORKER_PROCESSES + 1 when the tree holds more). */
  processes: number;
}

/** The resident bytes of `pid` and every process under it (a process gone meanwhile counts 0). */
export function measureTree(pid: number): MemorySample {
  const tree = processTree(pid, MAX_WORKER_PROCESSES + 1);
  let bytes = 0;
  for (const member of tree) bytes += residentBytes(member);
  return { bytes, processes: tree.length };
}

/** VmRSS from /proc/PID/status (in kB there, whatever the page size). */
function residentBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export interface MemoryWatchOptions {
  /** The root of the worker's process tree (the process the host started). */
  pid: number;
  /** How often to measure while the worker has messages in flight, and the most a cached sample may age. */
  everyMs: number;
  /** Whether the worker has a message in flight now. */
  busy(): boolean;
  /** A sample taken while the worker was busy (the watchdog's tick). */
  onSample(sample: MemorySample): void;
}

/**
 * Measures a worker while it works: a timer (unref'd) samples it every `everyMs` from the first message
 * sent until a tick finds it idle with nothing sent since the last one, so a worker that takes calls
 * back to back keeps one timer, not one per call, and an idle worker none.
 */
export class MemoryWatch {
  private last: MemorySample = { bytes: 0, processes: 0 };
  private sampledAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private sentSinceTick = false;

  constructor(private readonly options: MemoryWatchOptions) {}

  /** A message went out: watch until the worker is idle again. */
  sent(): void {
    this.sentSinceTick = true;
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.options.everyMs);
    this.timer.unref();
  }

  /** The latest sample, measured again when older than `everyMs`. */
  current(): MemorySample {
    if (performance.now() - this.sampledAt >= this.options.everyMs) this.measure();
    return this.last;
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    const busy = this.options.busy();
    if (!busy && !this.sentSinceTick) return this.stop();
    this.sentSinceTick = false;
    this.options.onSample(this.measure());
  }

  private measure(): MemorySample {
    this.last = measureTree(this.options.pid);
    this.sampledAt = performance.now();
    return this.last;
  }
}
