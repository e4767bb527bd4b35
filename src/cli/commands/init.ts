// Stub: replaced by the issue that builds `hookbox init`.
export async function initCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox init: not built yet\n");
  return 2;
}
