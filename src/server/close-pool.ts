import type { SandboxPool } from "../sandbox/api.js";

/**
 * Closes the sandbox pool, waiting at most `ms`: shutting down must not hang on a worker whose exit was
 * already missed (seen as an unsettled close right after a failed start).
 */
export async function closePool(pool: SandboxPool, ms = 3000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([pool.close().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
