import { Worker } from "node:worker_threads";
import { builtFile } from "../sandbox/paths.js";
import type { FileDiagnostic } from "../sandbox/files-bundler.js";

/*
 * Type-checks uploaded files off the server's event loop: a worker thread with its own heap limit and a
 * deadline, so an upload whose types take the compiler minutes or gigabytes costs one refused upload.
 */

export interface IsolatedCheckOptions {
  timeoutMs?: number;
  heapMb?: number;
}

export type CheckResult = { errors: FileDiagnostic[]; warnings: FileDiagnostic[] };

export function typeCheckFilesIsolated(
  files: Record<string, string>,
  entry: string,
  { timeoutMs = 30_000, heapMb = 512 }: IsolatedCheckOptions = {},
): Promise<CheckResult> {
  const refused = (message: string): CheckResult => ({ errors: [{ file: entry, line: 1, column: 1, message }], warnings: [] });
  return new Promise((resolve) => {
    const worker = new Worker(builtFile("check-worker.js"), {
      workerData: { files, entry },
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
      stdout: true,
      stderr: true,
    });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve(refused(`type-checking took longer than ${timeoutMs} ms; simplify the types`));
    }, timeoutMs);
    worker.once("message", (result: CheckResult) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve(result);
    });
    worker.once("error", (error) => {
      clearTimeout(timer);
      const memory = /heap|memory/i.test(error.message);
      resolve(
        refused(memory ? `type-checking needed more than ${heapMb} MB; simplify the types` : `type-checking failed: ${error.message}`),
      );
    });
  });
}
