import { parentPort } from "node:worker_threads";
import { typeCheckFiles } from "./check-files.js";

/* Worker-thread entry: type-checks uploaded file maps, one request at a time (check-isolated.ts bounds each). */
parentPort!.on("message", ({ id, files, entry }: { id: number; files: Record<string, string>; entry: string }) => {
  parentPort!.postMessage({ id, result: typeCheckFiles(files, entry) });
});
