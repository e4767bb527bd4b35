/** Times as people read them: a local time, and how far away a deadline is. */
export function time(ms: number | undefined): string {
  return ms === undefined ? "" : new Date(ms).toLocaleString();
}

export function untilDeadline(deadlineMs: number, now = Date.now()): string {
  const seconds = Math.round((deadlineMs - now) / 1000);
  if (seconds <= 0) return "due now";
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `in ${minutes} min ${seconds % 60} s` : `in ${seconds} s`;
}

export const shortId = (id: string): string => (id.length > 14 ? `${id.slice(0, 14)}…` : id);

export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
