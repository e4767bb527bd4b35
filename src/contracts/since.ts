/*
 * `since`, wherever a caller gives one (`hookbox replay --since`, `GET /v1/usage?since=`, `POST /v1/replays
 * {since}`): one grammar and one message. An ISO 8601 date (`2026-11-01`, midnight UTC) or a date and time with
 * `Z` or an offset (`2026-11-01T09:30:00Z`, `2026-11-01T09:30+02:00`); a time without one is refused, since it
 * would mean the server's local time.
 */

const SINCE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** Epoch milliseconds, or a problem that names what was expected and what was given. */
export function parseSince(value: string): { ms: number } | { problem: string } {
  const match = SINCE.exec(value.trim());
  const ms = match ? Date.parse(match[4] === undefined ? `${value.trim()}T00:00:00Z` : value.trim()) : Number.NaN;
  // Date.parse rolls 2026-02-30 over to March; a date must name a real day.
  const realDay = match && !Number.isNaN(ms) && new Date(`${match[1]}-${match[2]}-${match[3]}T00:00:00Z`).getUTCDate() === Number(match[3]);
  if (realDay) return { ms };
  const shown = value.length > 40 ? `${value.slice(0, 40)}...` : value;
  return {
    problem: `expected an ISO 8601 date or time such as 2026-11-01 or 2026-11-01T09:30:00Z (a time needs Z or an offset), got ${JSON.stringify(shown)}`,
  };
}
