// Stub: replaced by the issue that builds `hookbox resume`.
export async function resumeCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox resume: not built yet\n");
  return 2;
}
