// Stub: replaced by the issue that builds `hookbox run`.
export async function runCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox run: not built yet\n");
  return 2;
}
