import { HookboxError } from "../errors.js";
import type { CommonContext, MiddlewareContext, ToolOrigin } from "../contracts/context.js";
import { parseTurn, type Turn } from "../turns/turn.js";
import type { SandboxRun, ScriptManifest } from "../sandbox/api.js";
import { withRunContext } from "./ambient.js";

export type Next = (turn?: Turn) => Promise<Turn>;

/** One link of the chain around each engine call. */
export interface Middleware {
  name: string;
  origin: ToolOrigin;
  run(turn: Turn, next: Next, ctx: MiddlewareContext): Promise<Turn>;
}

/** Trusted middleware written by the host, `(turn, next, ctx)` like a script's. */
export interface HostMiddleware {
  name: string;
  run(turn: Turn, next: Next, ctx: MiddlewareContext): Turn | Promise<Turn>;
}

export function hostMiddleware(m: HostMiddleware): Middleware {
  return {
    name: m.name,
    origin: "host",
    run: (turn, next, ctx) => withRunContext(ctx, async () => m.run(turn, next, ctx)),
  };
}

export function scriptMiddleware(manifest: ScriptManifest, name: string, sandbox: SandboxRun): Middleware {
  return {
    name: `${manifest.name}/${name}`,
    origin: "script",
    run: (turn, next, ctx) => sandbox.callMiddleware(manifest.name, name, turn, ctx, (t) => next(t)),
  };
}

/**
 * Composes middleware around the engine call (first in the list = outermost). As in Hono's compose:
 * `next` twice is an error, and a middleware that returns nothing is an error naming it (never a
 * silently discarded model output). Every returned turn is validated.
 */
export function composeMiddleware(chain: Middleware[], engine: (turn: Turn) => Promise<Turn>, context: () => CommonContext) {
  return (turn: Turn): Promise<Turn> => {
    const dispatch = async (index: number, current: Turn): Promise<Turn> => {
      if (index === chain.length) return engine(current);
      const middleware = chain[index];
      let called = false;
      const next: Next = (nextTurn) => {
        if (called) return Promise.reject(new HookboxError("MIDDLEWARE", `middleware ${middleware.name} called next() twice`));
        called = true;
        return dispatch(index + 1, nextTurn ?? current);
      };
      const ctx: MiddlewareContext = { ...context(), timestampMs: Date.now(), middlewareName: middleware.name };
      let returned: unknown;
      try {
        returned = await middleware.run(current, next, ctx);
      } catch (error) {
        if (error instanceof HookboxError && error.details.middleware) throw error;
        const code = error instanceof HookboxError ? error.code : "MIDDLEWARE";
        const message = error instanceof Error ? error.message : String(error);
        throw new HookboxError(code, message.includes(middleware.name) ? message : `middleware ${middleware.name} failed: ${message}`, {
          middleware: middleware.name,
        });
      }
      if (returned === undefined || returned === null) {
        throw new HookboxError(
          "MIDDLEWARE",
          `middleware ${middleware.name} returned nothing: return the turn (usually \`return await next(turn)\`)`,
          {
            middleware: middleware.name,
          },
        );
      }
      try {
        return parseTurn(returned);
      } catch (error) {
        throw new HookboxError("HOOK_CONTRACT", `middleware ${middleware.name} returned an invalid turn: ${(error as Error).message}`, {
          middleware: middleware.name,
        });
      }
    };
    return dispatch(0, turn);
  };
}
