// Stub: replaced by the issue that builds `hookbox sessions`.
export async function sessionsCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox sessions: not built yet\n");
  return 2;
}
