import { randomBytes } from "node:crypto";

/** Random bytes drawn from a pool filled 4 KiB at a time: one call into the system's generator per ~400 ids. */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  used += bytes;
  return pool.toString("hex", used - bytes, used);
}

/**
 * Readable, collision-free ids: `run_` and 32 hex digits, the creation time in milliseconds (12) then 80 random
 * bits. Ids made later sort later, so the store's rows keyed by them (a run's events, snapshots and hook chain
 * records; a session's log) go where the newest rows already are, instead of onto pages of their own across
 * the whole table (docs/server.md, "What the store keeps, and when").
 */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(16).padStart(12, "0")}${randomHex(10)}`;
}

/** Pause ids are capabilities (whoever has one can continue the run): 128 random bits. */
export function newPauseId(): string {
  return `pause_${randomBytes(16).toString("base64url")}`;
}
