import type { BranchKind, BundleInstrumentation } from "./instrument.js";
import { parseCounted } from "./counted.js";

/*
 * What a test session's cases reached: the counters of every instrumented bundle, summed, and read back per
 * source file (a file two bundles share, or two variants of one bundle, is one file in the report).
 */

export interface FileCoverage {
  path: string;
  /** Hits of each counted statement, by the line it starts on. */
  statements: { line: number; hits: number }[];
  functions: { name: string; line: number; hits: number }[];
  branches: { kind: BranchKind; line: number; arms: { line: number; hits: number }[] }[];
}

export class CoverageCollector {
  private readonly totals = new Map<BundleInstrumentation, number[]>();

  /** A bundle whose counters belong in the report (one with no case run still counts: all zero). */
  add(instrumentation: BundleInstrumentation): void {
    if (!this.totals.has(instrumentation)) this.totals.set(instrumentation, []);
  }

  /** What one run's script contexts counted (each context's array spans all of the bundle's counters). */
  addCounted(instrumentation: BundleInstrumentation, counted: Map<string, { counts: number[] }>): void {
    this.add(instrumentation);
    const totals = this.totals.get(instrumentation)!;
    for (const { counts } of counted.values()) counts.forEach((count, index) => (totals[index] = (totals[index] ?? 0) + count));
  }

  /** As addCounted, from the runtime's texts (a whole run's, read as it ended). */
  addTexts(instrumentation: BundleInstrumentation, texts: { script: string; text: string }[]): void {
    const counted = new Map<string, { counts: number[] }>();
    for (const { script, text } of texts) {
      const value = parseCounted(text, instrumentation.counters);
      if (value) counted.set(script, value);
    }
    this.addCounted(instrumentation, counted);
  }

  /** Every instrumented file, merged by path, in path order. */
  files(): FileCoverage[] {
    const byPath = new Map<string, FileCoverage>();
    for (const [instrumentation, totals] of this.totals) {
      for (const map of instrumentation.files) {
        const hits = (counter: number) => totals[counter] ?? 0;
        const file: FileCoverage = {
          path: map.path,
          statements: map.statements.map((statement) => ({ line: statement.line, hits: hits(statement.counter) })),
          functions: map.functions.map((fn) => ({ name: fn.name, line: fn.line, hits: hits(fn.counter) })),
          branches: map.branches.map((branch) => ({
            kind: branch.kind,
            line: branch.line,
            arms: branch.arms.map((arm) => ({ line: arm.line, hits: hits(arm.counter) })),
          })),
        };
        const known = byPath.get(map.path);
        byPath.set(map.path, known ? merged(known, file) : file);
      }
    }
    return [...byPath.values()].sort((a, b) => a.path.localeCompare(b.path));
  }
}

/** Two counts of one file: the same statements in the same order (one text), hits added. */
function merged(a: FileCoverage, b: FileCoverage): FileCoverage {
  if (a.statements.length !== b.statements.length || a.branches.length !== b.branches.length || a.functions.length !== b.functions.length)
    return a.statements.length >= b.statements.length ? a : b;
  return {
    path: a.path,
    statements: a.statements.map((statement, i) => ({ line: statement.line, hits: statement.hits + b.statements[i]!.hits })),
    functions: a.functions.map((fn, i) => ({ ...fn, hits: fn.hits + b.functions[i]!.hits })),
    branches: a.branches.map((branch, i) => ({
      ...branch,
      arms: branch.arms.map((arm, j) => ({ line: arm.line, hits: arm.hits + (b.branches[i]!.arms[j]?.hits ?? 0) })),
    })),
  };
}
