import { HookboxError } from "../errors.js";
import type { ScriptManifest } from "./api.js";
import type { Bundle } from "./bundle-output.js";
import { encodeCallArgs, type EncodedArgs, type ResultUse } from "./call-args.js";
import { describeCall } from "./call-errors.js";
import type { CallbackRequest } from "./callback.js";
import { nestingDepth } from "./nested-calls.js";

/** The bounds admission enforces (the pool's options). */
export interface AdmissionLimits {
  /** Callbacks of one tenant waiting for its gate. */
  maxQueueDepth: number;
  /** Sandbox calls nested through middleware `next()`. */
  maxNestingDepth: number;
  /** A callback's arguments, serialized. */
  maxPayloadBytes: number;
}

/** What admission needs to know of the run asking. */
export interface AdmittingRun {
  readonly runId: string;
  readonly closed: boolean;
  /** The run's own manifest of `script`, as it was when the run opened. */
  manifest(script: string): ScriptManifest | undefined;
}

/** What a tenant has loaded, by script name. */
export type LoadedScripts = ReadonlyMap<string, { manifest: ScriptManifest; bundle: Bundle }>;

/** What an admitted request travels with. */
export interface Admitted {
  bundle: Bundle;
  encoded: EncodedArgs;
  /** How deep in nested sandbox calls it is made. */
  depth: number;
  /** Whether the host should parse the lazy result ahead (call-args.ts `ResultUse`). */
  prefetch: boolean;
}

/** How a refusal names the callback (made only for a refusal: admission runs on every callback). */
function labelOf(request: CallbackRequest): string {
  return `${request.script}: ${describeCall(request)}`;
}

/**
 * Whether a run may start a callback: every rule a callback must pass before it is queued, in one place,
 * cheapest first. A refusal throws a HookboxError naming the script, the callback and the limit; nothing
 * has reached the worker then.
 */
export class Admission {
  constructor(
    private readonly tenant: string,
    private readonly limits: AdmissionLimits,
    private readonly scripts: LoadedScripts,
    private readonly resultUse: ResultUse,
  ) {}

  admit(run: AdmittingRun, request: CallbackRequest, waiting: number): Admitted {
    const { script, kind, target } = request;
    if (run.closed) throw new HookboxError("CANCELLED", `run ${run.runId} is closed`);
    const manifest = run.manifest(script);
    if (manifest === undefined) throw new HookboxError("SCRIPT_ERROR", `script "${script}" is not part of run ${run.runId}`);
    const known: readonly string[] =
      kind === "middleware" ? manifest.middleware : kind === "tool" ? manifest.tools.map((tool) => tool.name) : manifest.hooks;
    if (!known.includes(target)) throw new HookboxError("SCRIPT_ERROR", `script "${script}" has no ${kind} named "${target}"`);
    const loaded = this.scripts.get(script);
    if (loaded?.manifest.bundleHash !== manifest.bundleHash)
      throw new HookboxError("SCRIPT_ERROR", `script "${script}" of run ${run.runId} is no longer loaded in tenant ${this.tenant}`);

    const plan = kind === "hook" ? this.resultUse.plan(script, target) : undefined;
    const encoded = encodeCallArgs(kind, request.args, plan?.lazy);
    if (encoded.bytes > this.limits.maxPayloadBytes)
      throw new HookboxError(
        "PAYLOAD_TOO_LARGE",
        `${labelOf(request)}: the payload is ${encoded.bytes} bytes, over the sandbox's maxPayloadBytes of ${this.limits.maxPayloadBytes}`,
        { bytes: encoded.bytes, maxPayloadBytes: this.limits.maxPayloadBytes },
      );
    const depth = nestingDepth();
    if (depth >= this.limits.maxNestingDepth)
      throw new HookboxError(
        "SANDBOX_OVERLOADED",
        `${labelOf(request)}: sandbox calls nested ${depth} deep (limit ${this.limits.maxNestingDepth})`,
      );
    if (waiting >= this.limits.maxQueueDepth)
      throw new HookboxError(
        "SANDBOX_OVERLOADED",
        `tenant ${this.tenant}: ${waiting} callbacks are already waiting (limit ${this.limits.maxQueueDepth}); refusing ${labelOf(request)}`,
      );
    return { bundle: loaded.bundle, encoded, depth, prefetch: plan?.prefetch ?? false };
  }
}
