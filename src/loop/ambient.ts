import { AsyncLocalStorage } from "node:async_hooks";
import type { CommonContext } from "../contracts/context.js";

/**
 * Host middleware and host tools read the run's ids from here instead of taking them as parameters:
 * the loop enters this store around every host callback it makes.
 */
const storage = new AsyncLocalStorage<CommonContext>();

export function withRunContext<T>(ctx: CommonContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** The ids and deadlines of the run whose callback is executing, or undefined outside a run. */
export function currentRunContext(): CommonContext | undefined {
  return storage.getStore();
}
