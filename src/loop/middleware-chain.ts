import { HookboxError } from "../errors.js";
import type { CommonContext, MiddlewareContext, CodeOrigin } from "../contracts/context.js";
import { parseTurn, type Turn } from "../turns/turn.js";
import type { SandboxRun, ScriptManifest } from "../sandbox/api.js";
import { MAX_ERROR_MESSAGE_CHARS } from "../sandbox/wire/error-limits.js";
import { withRunContext } from "./ambient.js";

export type Next = (turn?: Turn) => Promise<Turn>;

/** One link of the chain around each engine call. */
export interface Middleware {
  name: string;
  origin: CodeOrigin;
  run(turn: Turn, next: Next, ctx: MiddlewareContext): Promise<Turn>;
}

/** Trusted middleware written by the host, `(turn, next, ctx)` like a script's. */
export interface HostMiddleware {
  name: string;
  run(turn: Turn, next: Next, ctx: MiddlewareContext): Turn | Promise<Turn>;
}

/** A host middleware's turn is checked here with TurnSchema; a script's by the sandbox (validateMiddlewareTurn). */
export function hostMiddleware(m: HostMiddleware): Middleware {
  return {
    name: m.name,
    origin: "host",
    run: async (turn, next, ctx) => {
      const returned = await withRunContext(ctx, async () => m.run(turn, next, ctx));
      if (returned === undefined || returned === null) return returned as never;
      try {
        return parseTurn(returned);
      } catch (error) {
        throw new HookboxError("HOOK_CONTRACT", `middleware ${m.name} returned an invalid turn: ${(error as Error).message}`, {
          middleware: `${m.name}`,
        });
      }
    },
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
 * silently discarded model output). Each middleware's own adapter validates the turn it returns, once.
 */
export function composeMiddleware(chain: Middleware[], engine: (turn: Turn) => Promise<Turn>, context: () => CommonContext) {
  return (turn: Turn): Promise<Turn> => {
    const dispatch = async (index: number, current: Turn): Promise<Turn> => {
      if (index === chain.length) return engine(current);
      const middleware = chain[index];
      let called = false;
      /** What next() failed with, so a middleware that rethrows it does not make it its own failure. */
      let nextFailure: { error: unknown } | undefined;
      const next: Next = (nextTurn) => {
        if (called) return Promise.reject(new HookboxError("MIDDLEWARE", `middleware ${middleware.name} called next() twice`));
        called = true;
        return dispatch(index + 1, nextTurn ?? current).catch((error: unknown) => {
          nextFailure = { error };
          throw error;
        });
      };
      const ctx: MiddlewareContext = { ...context(), timestampMs: Date.now(), middlewareName: middleware.name };
      let returned: unknown;
      try {
        returned = await middleware.run(current, next, ctx);
      } catch (error) {
        if (nextFailure && isRethrown(error, nextFailure.error)) throw nextFailure.error;
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
      return returned as Turn;
    };
    return dispatch(0, turn);
  };
}

/**
 * True when a middleware's failure is the error its next() failed with, passed on: the same object (host
 * middleware), or, from a script, a throw carrying the same code and message the host gave its next() (the
 * sandbox turns what a script throws into SCRIPT_ERROR with the thrown code and message, clipped at
 * MAX_ERROR_MESSAGE_CHARS, in its details). A script can only claim an error its own next() produced, so a
 * model's failure stays the model's.
 */
function isRethrown(error: unknown, original: unknown): boolean {
  if (error === original) return true;
  if (!(error instanceof HookboxError) || !(original instanceof HookboxError) || error.code !== "SCRIPT_ERROR") return false;
  return error.details.errorCode === original.code && error.details.thrownMessage === original.message.slice(0, MAX_ERROR_MESSAGE_CHARS);
}
