// Stub: replaced by the issue that builds `hookbox check`.
export async function checkCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox check: not built yet\n");
  return 2;
}
