import { parentPort, workerData } from "node:worker_threads";
import { typeCheckFiles } from "./check-files.js";

/* Worker-thread entry: type-checks one uploaded file map (check-isolated.ts starts it and enforces its bounds). */
const { files, entry } = workerData as { files: Record<string, string>; entry: string };
parentPort!.postMessage(typeCheckFiles(files, entry));
