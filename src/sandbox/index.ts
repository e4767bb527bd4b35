// PLACEHOLDER by the lead so the CLI builds; the sandbox engineer replaces this file with the real pool.
import { HookboxError } from "../errors.js";
import type { SandboxPool } from "./api.js";

export function createSandboxPool(_options: Record<string, unknown> = {}): SandboxPool {
  return {
    tenant() {
      throw new HookboxError("SANDBOX_CRASHED", "the sandbox is not built yet");
    },
    async close() {},
  };
}
