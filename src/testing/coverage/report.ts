import { relative } from "node:path";
import type { FileCoverage } from "./collector.js";

/*
 * Coverage as people and tools read it: a text summary per script file, and lcov (the tracefile format of the
 * lcov project, which genhtml, editors and CI services read). A line's hits are the most any statement starting on
 * it had, as istanbul counts them.
 */

export interface Totals {
  found: number;
  hit: number;
}

export interface FileTotals {
  path: string;
  lines: Totals;
  branches: Totals;
  functions: Totals;
  /** Lines with code that no case reached, in order. */
  missedLines: number[];
}

/** Each line that holds the start of a counted statement, and its hits. */
export function lineHits(file: FileCoverage): Map<number, number> {
  const lines = new Map<number, number>();
  for (const statement of file.statements) lines.set(statement.line, Math.max(lines.get(statement.line) ?? 0, statement.hits));
  return new Map([...lines].sort(([a], [b]) => a - b));
}

export function fileTotals(file: FileCoverage): FileTotals {
  const lines = lineHits(file);
  const arms = file.branches.flatMap((branch) => branch.arms);
  return {
    path: file.path,
    lines: { found: lines.size, hit: [...lines.values()].filter((hits) => hits > 0).length },
    branches: { found: arms.length, hit: arms.filter((arm) => arm.hits > 0).length },
    functions: { found: file.functions.length, hit: file.functions.filter((fn) => fn.hits > 0).length },
    missedLines: [...lines].filter(([, hits]) => hits === 0).map(([line]) => line),
  };
}

export function percent(totals: Totals): number {
  return totals.found === 0 ? 100 : (100 * totals.hit) / totals.found;
}

/** All files' lines together: what `--coverage-min` compares with. */
export function overallLines(files: FileCoverage[]): Totals {
  return files
    .map(fileTotals)
    .reduce((sum, each) => ({ found: sum.found + each.lines.found, hit: sum.hit + each.lines.hit }), { found: 0, hit: 0 });
}

/** The text summary: one line per file (lines, branches, functions, lines not reached), then the total. */
export function coverageSummary(files: FileCoverage[]): string {
  const rows = files.map(fileTotals);
  const cell = (totals: Totals) => `${percent(totals).toFixed(1).padStart(5)}% (${totals.hit}/${totals.found})`;
  const width = Math.max(4, ...rows.map((row) => shown(row.path).length));
  const out = [`${"file".padEnd(width)}  ${"lines".padEnd(17)}  ${"branches".padEnd(17)}  ${"functions".padEnd(17)}  lines not reached`];
  for (const row of rows)
    out.push(
      `${shown(row.path).padEnd(width)}  ${cell(row.lines).padEnd(17)}  ${cell(row.branches).padEnd(17)}  ${cell(row.functions).padEnd(17)}  ${ranges(row.missedLines)}`,
    );
  const all = rows.reduce(
    (sum, row) => ({
      lines: add(sum.lines, row.lines),
      branches: add(sum.branches, row.branches),
      functions: add(sum.functions, row.functions),
    }),
    { lines: { found: 0, hit: 0 }, branches: { found: 0, hit: 0 }, functions: { found: 0, hit: 0 } },
  );
  out.push(`${"all files".padEnd(width)}  ${cell(all.lines).padEnd(17)}  ${cell(all.branches).padEnd(17)}  ${cell(all.functions)}`);
  return out.join("\n");
}

function add(a: Totals, b: Totals): Totals {
  return { found: a.found + b.found, hit: a.hit + b.hit };
}

function shown(path: string): string {
  return relative(process.cwd(), path) || path;
}

/** `3-5, 9` for [3, 4, 5, 9]. */
function ranges(lines: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    let j = i;
    while (j + 1 < lines.length && lines[j + 1] === lines[j]! + 1) j++;
    parts.push(j > i ? `${lines[i]}-${lines[j]}` : `${lines[i]}`);
    i = j;
  }
  return parts.join(", ");
}

/** The lcov tracefile: one record per source file (absolute paths, as genhtml reads the sources from them). */
export function lcov(files: FileCoverage[]): string {
  const out: string[] = [];
  for (const file of files) {
    out.push("TN:", `SF:${file.path}`);
    // lcov names a function by its name: two of one name (two anonymous ones) get their line added.
    const seen = new Map<string, number>();
    for (const fn of file.functions) seen.set(fn.name, (seen.get(fn.name) ?? 0) + 1);
    const names = file.functions.map((fn) => ((seen.get(fn.name) ?? 0) > 1 ? `${fn.name}@${fn.line}` : fn.name));
    file.functions.forEach((fn, i) => out.push(`FN:${fn.line},${names[i]}`));
    file.functions.forEach((fn, i) => out.push(`FNDA:${fn.hits},${names[i]}`));
    out.push(`FNF:${file.functions.length}`, `FNH:${file.functions.filter((fn) => fn.hits > 0).length}`);
    file.branches.forEach((branch, block) =>
      branch.arms.forEach((arm, index) => out.push(`BRDA:${branch.line},${block},${index},${arm.hits}`)),
    );
    const arms = file.branches.flatMap((branch) => branch.arms);
    out.push(`BRF:${arms.length}`, `BRH:${arms.filter((arm) => arm.hits > 0).length}`);
    const lines = lineHits(file);
    for (const [line, hits] of lines) out.push(`DA:${line},${hits}`);
    out.push(`LF:${lines.size}`, `LH:${[...lines.values()].filter((hits) => hits > 0).length}`, "end_of_record");
  }
  return `${out.join("\n")}\n`;
}
