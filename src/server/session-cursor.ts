import { ApiError } from "./api-error.js";

/* `GET /v1/sessions?limit=&cursor=`: pages in creation order; the cursor is opaque to clients. */

export const DEFAULT_SESSIONS_PAGE = 100;
export const MAX_SESSIONS_PAGE = 1000;

export interface SessionPosition {
  createdMs: number;
  id: string;
}

export function sessionCursor(position: SessionPosition): string {
  return Buffer.from(`${position.createdMs}:${position.id}`).toString("base64url");
}

export function readSessionCursor(cursor: string): SessionPosition {
  const match = /^(\d{1,16}):([A-Za-z0-9_-]{1,200})$/.exec(Buffer.from(cursor.slice(0, 400), "base64url").toString("utf8"));
  if (!match) throw new ApiError(400, "VALIDATION", "?cursor is not a cursor this server gave (pass nextCursor as it came)", "cursor");
  return { createdMs: Number(match[1]), id: match[2] };
}
