import type { ChildProcess } from "node:child_process";
import type { Socket } from "node:net";

/*
 * What a worker writes besides its frames: stdout and stderr carry nothing of the protocol, only what Node
 * prints when the worker fails (a fatal error's report, an uncaught exception's stack). The host keeps the
 * tail for the crash message and reads at most MAX_WORKER_OUTPUT_BYTES over the worker's life: a worker
 * that writes more (a taken-over worker making the host read without end) breaks the protocol.
 */

/** Bytes a worker may write on stdout and stderr together (a V8 fatal-error report is a few KB). */
export const MAX_WORKER_OUTPUT_BYTES = 256 * 1024;
const TAIL_CHARS = 2000;

export class WorkerOutput {
  private tailText = "";
  private bytes = 0;
  private readonly streams: Socket[] = [];

  constructor(child: ChildProcess, onOverflow: (reason: string) => void) {
    for (const [fd, name] of [
      [1, "stdout"],
      [2, "stderr"],
    ] as const) {
      const stream = child.stdio[fd] as Socket | null;
      if (stream === null) continue;
      this.streams.push(stream);
      // Never keeps the host alive: a busy worker's frame pipe does that.
      stream.unref();
      stream.on("error", () => undefined);
      stream.on("data", (chunk: Buffer) => {
        this.bytes += chunk.length;
        if (this.bytes > MAX_WORKER_OUTPUT_BYTES) {
          this.stop();
          onOverflow(`it wrote more than ${MAX_WORKER_OUTPUT_BYTES} bytes on its stdout and stderr (the last on ${name})`);
          return;
        }
        this.tailText = (this.tailText + chunk.toString()).slice(-TAIL_CHARS);
      });
    }
  }

  /** The last lines the worker wrote, for the message of a crash. */
  tail(): string {
    return this.tailText;
  }

  /** Reads nothing more: the worker's further writes fail (it is being killed). */
  stop(): void {
    for (const stream of this.streams) stream.destroy();
  }
}
