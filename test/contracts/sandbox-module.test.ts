import { afterAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import ts from "typescript";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { repoRoot } from "../helpers/cli.js";
import { script } from "../sandbox/helpers.js";

/** Every value the script types declare (types/hookbox.d.ts and what it re-exports), read with the compiler API. */
function declaredValueExports(): string[] {
  const file = join(repoRoot, "types/hookbox.d.ts");
  const program = ts.createProgram([file], { noEmit: true, strict: true });
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
  return checker
    .getExportsOfModule(moduleSymbol)
    .map((symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol))
    .filter((symbol) => (symbol.flags & ts.SymbolFlags.Value) !== 0)
    .map((symbol) => symbol.getName())
    .sort();
}

const pool = createSandboxPool({ workers: 1 });
afterAll(async () => pool.close());

describe('the in-sandbox "hookbox" module', () => {
  it("provides every value the script types declare, so a script that type-checks finds them at run time", async () => {
    const names = declaredValueExports();
    expect(names).toContain("defineScript");
    expect(names).toContain("getKey");
    const tenant = pool.tenant("module-parity");
    const [manifest] = await tenant.load([
      script(
        "probe",
        `import * as hookbox from "hookbox";
         export default hookbox.defineScript({ hooks: { beforeToolCall() {
           const names = ${JSON.stringify(names)};
           const missing = names.filter((name) => (hookbox as any)[name] === undefined);
           return { action: "skip", result: { missing } };
         } } });`,
      ),
    ]);
    const run = await tenant.openRun({ runId: "r", scripts: [manifest] });
    const decision = await run.callHook(manifest.name, "beforeToolCall", {
      phase: "beforeToolCall",
      call: { id: "c", name: "t", args: {}, origin: "script" },
      attempt: 1,
      sessionId: "s",
      inferenceId: "i",
      traceId: "t",
      turnId: "u",
      timestampMs: 1,
      tags: {},
      budget: { iteration: 1, maxIterations: 20, tokensUsed: 0, costUsd: 0, retriesLeft: 20 },
    });
    expect(decision).toEqual({ action: "skip", result: { missing: [] } });
    await run.close();
  });
});
