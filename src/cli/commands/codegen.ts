// Stub: replaced by the issue that builds `hookbox codegen`.
export async function codegenCommand(_argv: string[]): Promise<number> {
  process.stderr.write("hookbox codegen: not built yet\n");
  return 2;
}
