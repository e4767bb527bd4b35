import { randomBytes, randomUUID } from "node:crypto";

/** Readable, collision-free ids: `run_2f1c...`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll("-", "")}`;
}

/** Pause ids are capabilities (whoever has one can continue the run): 128 random bits. */
export function newPauseId(): string {
  return `pause_${randomBytes(16).toString("base64url")}`;
}
