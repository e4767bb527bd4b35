import { HookboxError } from "../errors.js";
import type { HookReturns } from "../contracts/hook-returns.js";
import { validateHookReturn } from "../contracts/validate-hook-return.js";
import type {
  AfterToolCallPayload,
  BeforeFinishPayload,
  BeforeRunPayload,
  BeforeToolCallPayload,
  HookPayload,
  OnToolErrorPayload,
  CodeOrigin,
} from "../contracts/context.js";
import type { HookName } from "../turns/keys.gen.js";
import type { OnHookError, SandboxRun, ScriptManifest } from "../sandbox/api.js";
import { withRunContext } from "./ambient.js";

/**
 * One source of lifecycle hooks (a sandboxed script or a trusted host hook set). The hook chain
 * treats both the same way: same order rules, same validation, same onHookError policy, same events.
 */
export interface HookProvider {
  name: string;
  origin: CodeOrigin;
  onHookError: OnHookError;
  /** Provenance, on every hook-decision: the script version (when it came from a deployment) and its bundle hash. */
  version?: number;
  bundleHash?: string;
  has(hook: HookName): boolean;
  call<H extends HookName>(hook: H, payload: HookPayload): Promise<HookReturns[H]>;
}

export type MaybePromise<T> = T | Promise<T>;

/** Host hooks are trusted code, yet their returns are validated exactly like a script's. */
export interface HostHooks {
  name: string;
  onHookError?: OnHookError;
  beforeToolCall?(payload: BeforeToolCallPayload): MaybePromise<HookReturns["beforeToolCall"]>;
  afterToolCall?(payload: AfterToolCallPayload): MaybePromise<HookReturns["afterToolCall"]>;
  onToolError?(payload: OnToolErrorPayload): MaybePromise<HookReturns["onToolError"]>;
  beforeRun?(payload: BeforeRunPayload): MaybePromise<HookReturns["beforeRun"]>;
  beforeFinish?(payload: BeforeFinishPayload): MaybePromise<HookReturns["beforeFinish"]>;
}

export function hostHookProvider(hooks: HostHooks): HookProvider {
  return {
    name: hooks.name,
    origin: "host",
    onHookError: hooks.onHookError ?? "fail-closed",
    has: (hook) => typeof hooks[hook] === "function",
    async call(hook, payload) {
      const fn = hooks[hook] as ((p: HookPayload) => MaybePromise<unknown>) | undefined;
      if (!fn) return undefined as never;
      let value: unknown;
      try {
        value = await withRunContext(payload, () => fn.call(hooks, payload));
      } catch (error) {
        throw new HookboxError("SCRIPT_ERROR", `${hooks.name}: ${hook} threw: ${(error as Error)?.message ?? String(error)}`);
      }
      return validateHookReturn(hooks.name, hook, value);
    },
  };
}

export function scriptHookProvider(manifest: ScriptManifest, run: SandboxRun, version?: number): HookProvider {
  const hooks = new Set(manifest.hooks);
  return {
    name: manifest.name,
    origin: "script",
    onHookError: manifest.onHookError,
    bundleHash: manifest.bundleHash,
    ...(version !== undefined ? { version } : {}),
    has: (hook) => hooks.has(hook),
    call: (hook, payload) => run.callHook(manifest.name, hook, payload),
  };
}
