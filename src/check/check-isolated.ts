import { Worker } from "node:worker_threads";
import { distFile } from "../sandbox/paths.js";
import type { FileDiagnostic } from "../sandbox/files-bundler.js";
import { TenantTurns } from "./tenant-turns.js";

/*
 * Type-checks uploaded files off the server's event loop: one worker thread, kept warm between uploads (loading
 * the compiler costs more than a small check), with its own heap limit. Checks run one at a time, tenants taking
 * turns (tenant-turns.ts), so one tenant's pile of slow uploads delays another's by about one check. One that
 * passes its deadline or exhausts the heap ends the worker (the next check starts a new one), so an upload whose
 * types take the compiler minutes or gigabytes costs one refused upload.
 */

export interface IsolatedCheckOptions {
  timeoutMs?: number;
  heapMb?: number;
  /** Whose upload this is: each tenant's checks wait in their own line (default: one shared line). */
  tenant?: string;
}

export type CheckResult = { errors: FileDiagnostic[]; warnings: FileDiagnostic[] };

let worker: { thread: Worker; heapMb: number } | undefined;
const turns = new TenantTurns();
let lastId = 0;

export function typeCheckFilesIsolated(
  files: Record<string, string>,
  entry: string,
  options: IsolatedCheckOptions = {},
): Promise<CheckResult> {
  return turns.run(options.tenant ?? "", () => checkOnce(files, entry, options));
}

function checkOnce(
  files: Record<string, string>,
  entry: string,
  { timeoutMs = 30_000, heapMb = 512 }: IsolatedCheckOptions,
): Promise<CheckResult> {
  const refused = (message: string): CheckResult => ({ errors: [{ file: entry, line: 1, column: 1, message }], warnings: [] });
  if (worker && worker.heapMb !== heapMb) void retire(worker.thread);
  if (!worker) {
    const thread = new Worker(distFile("check-worker.js"), {
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
      stdout: true,
      stderr: true,
    });
    thread.unref();
    worker = { thread, heapMb };
  }
  const { thread } = worker;
  const id = ++lastId;
  return new Promise((resolve) => {
    const done = (result: CheckResult) => {
      clearTimeout(timer);
      thread.off("message", onMessage);
      thread.off("error", onError);
      thread.off("exit", onExit);
      resolve(result);
    };
    const onMessage = (message: { id: number; result: CheckResult }) => {
      if (message.id === id) done(message.result);
    };
    const onError = (error: Error) => {
      void retire(thread);
      const memory = /heap|memory/i.test(error.message);
      done(refused(memory ? `type-checking needed more than ${heapMb} MB; simplify the types` : `type-checking failed: ${error.message}`));
    };
    const onExit = () => {
      void retire(thread);
      done(refused("type-checking stopped unexpectedly"));
    };
    const timer = setTimeout(() => {
      void retire(thread);
      done(refused(`type-checking took longer than ${timeoutMs} ms; simplify the types`));
    }, timeoutMs);
    thread.on("message", onMessage);
    thread.once("error", onError);
    thread.once("exit", onExit);
    thread.postMessage({ id, files, entry });
  });
}

function retire(thread: Worker): Promise<number> {
  if (worker?.thread === thread) worker = undefined;
  return thread.terminate();
}
