import { randomBytes } from "node:crypto";

/**
 * Readable, collision-free ids: `run_` and 32 hex digits, the creation time in milliseconds (12) then 80 random
 * bits. Ids made later sort later, so the store's rows keyed by them (a run's events, snapshots and hook chain
 * records; a session's log) go where the newest rows already are, instead of onto pages of their own across
 * the whole table (docs/server.md, "What the store keeps, and when").
 */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(16).padStart(12, "0")}${randomBytes(10).toString("hex")}`;
}

/** Pause ids are capabilities (whoever has one can continue the run): 128 random bits. */
export function newPauseId(): string {
  return `pause_${randomBytes(16).toString("base64url")}`;
}
