// Stub: replaced by the issue that builds `hookbox serve`.
export async function serveCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox serve: not built yet\n");
  return 2;
}
