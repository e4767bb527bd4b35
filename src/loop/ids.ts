import { randomBytes } from "node:crypto";

/** Random bytes drawn from a pool filled 4 KiB at a time: one call into the system's generator per ~400 ids. */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;
const HEX_DIGITS = Array.from("0123456789abcdef", (digit) => digit.charCodeAt(0));
/** Reused: the character codes of one id's random digits (made into one flat string, not a slice of a bigger one). */
const codes: number[] = [];

function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  codes.length = 2 * bytes;
  for (let index = 0; index < bytes; index++) {
    const byte = pool[used + index]!;
    codes[2 * index] = HEX_DIGITS[byte >> 4]!;
    codes[2 * index + 1] = HEX_DIGITS[byte & 15]!;
  }
  used += bytes;
  return String.fromCharCode.apply(null, codes);
}

/** The creation time's 12 hex digits, kept for the millisecond it was made in (several ids are made per ms). */
let clockMs = -1;
let clockHex = "";

/**
 * Readable, collision-free ids: `run_` and 32 hex digits, the creation time in milliseconds (12) then 80 random
 * bits. Ids made later sort later, so the store's rows keyed by them (a run's events, snapshots and hook chain
 * records; a session's log) go where the newest rows already are, instead of onto pages of their own across
 * the whole table (docs/server.md, "What the store keeps, and when").
 */
export function newId(prefix: string): string {
  const now = Date.now();
  if (now !== clockMs) {
    clockMs = now;
    clockHex = now.toString(16).padStart(12, "0");
  }
  return `${prefix}_${clockHex}${randomHex(10)}`;
}

/** A W3C trace id for a run without a caller's: 32 hex digits, 128 random bits from the same pool as the ids'. */
export function newTraceId(): string {
  return randomHex(16);
}

/** Pause ids are capabilities (whoever has one can continue the run): 128 random bits. */
export function newPauseId(): string {
  return `pause_${randomBytes(16).toString("base64url")}`;
}
