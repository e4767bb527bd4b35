import type { ChildProcess } from "node:child_process";
import { distFile } from "../paths.js";
import type { Launcher, LaunchRequest } from "./launcher.js";
import type { ProbePlan, ProbeReport } from "./probe-report.js";
import type { ResourceRequest } from "./limits.js";

export interface ProbeOptions {
  /** Node's permission model inside (default true, as for the workers). */
  innerLayer?: boolean;
  /** Host files to bind inside at /hookbox/dist/<name> (native programs the plan runs). */
  binds?: string[];
  resources?: ResourceRequest;
  /** How long the probe may take before it is killed (default 15 s). */
  timeoutMs?: number;
  /** Called with the launched process (a test may end it as the supervisor ends a worker). */
  started?: (child: ChildProcess) => void;
}

/** The probe as a launch request: the worker's Node flags, nothing on stdin, its report on stdout. */
function probeRequest(plan: ProbePlan, options: ProbeOptions): LaunchRequest {
  return {
    entry: distFile("wall-probe.js"),
    reads: options.binds ?? [],
    nodeArgs: ["--no-node-snapshot"],
    args: [JSON.stringify(plan)],
    stdio: ["ignore", "pipe", "pipe"],
    innerLayer: options.innerLayer ?? true,
    ...(options.resources ? { resources: options.resources } : {}),
  };
}

function parseReport(stdout: string, stderr: string, status: string): ProbeReport {
  const line = stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as ProbeReport;
  } catch {
    const why = stderr.trim().split("\n").slice(-3).join(" | ") || stdout.trim() || "no output";
    throw new Error(`the wall probe failed (${status}): ${why}`);
  }
}

/** Runs the probe through `launcher` and returns its report (throws when it did not report). */
export async function runProbe(launcher: Launcher, plan: ProbePlan, options: ProbeOptions = {}): Promise<ProbeReport> {
  const child = launcher.launch(probeRequest(plan, options));
  options.started?.(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => launcher.kill(child), options.timeoutMs ?? 15_000);
  const status = await new Promise<string>((resolve) => {
    child.once("error", (error) => resolve(error.message));
    child.once("close", (code, signal) => resolve(signal ? `killed by ${signal}` : `exit code ${code}`));
  });
  clearTimeout(timer);
  return parseReport(stdout, stderr, status);
}

/** The same, synchronously (the start-up check of `auto` and `required`, before any worker exists). */
export function runProbeSync(launcher: Launcher, plan: ProbePlan = {}): ProbeReport {
  const result = launcher.launchSync(probeRequest(plan, {}), { timeoutMs: 15_000 });
  const status = result.error ? result.error.message : result.signal ? `killed by ${result.signal}` : `exit code ${result.status}`;
  return parseReport(result.stdout ?? "", result.stderr ?? "", status);
}
