import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { vi } from "vitest";
import { packageRoot } from "../../src/package-root.js";

export const root = packageRoot();

export function tempDir(prefix = "hookbox-codegen-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function realSpec(): Record<string, any> {
  return JSON.parse(readFileSync(join(root, "codegen/spec.json"), "utf8"));
}

/** Runs a command function, capturing what it writes to stdout and stderr. */
export async function capture(run: () => Promise<number>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true));
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true));
  try {
    return { code: await run(), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}
