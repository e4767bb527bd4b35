import type { CaseResult, TestReport } from "./runner.js";
import { shown } from "./match.js";
import { fileTotals } from "./coverage/report.js";

/*
 * How `hookbox test` reports: a line per case as OPA's test runner prints them (PASS/FAIL, with expected vs. got
 * and the script line under a failure), a closing `N passed, N failed` line; or one JSON document; or JUnit XML
 * for CI systems.
 */

/** The lines of one case: `PASS file: name`, and under a failure what was expected, what came, and where. */
export function caseLines(result: CaseResult): string[] {
  const head = `${result.status === "pass" ? "PASS" : "FAIL"} ${result.file}: ${result.name}`;
  if (result.status === "pass") return [head];
  const lines = [head];
  for (const failure of result.failures) {
    const indent = "    ";
    const about = `${failure.target}${failure.call ? `, ${failure.call}` : ""}`;
    if (failure.step !== undefined) lines.push(`  step ${failure.step + 1} (${about}):`);
    else if (failure.call) lines.push(`  ${about}:`);
    const pad = failure.step !== undefined || failure.call ? `${indent}  ` : indent;
    if (failure.problem) lines.push(`${pad}${failure.problem}`);
    if (failure.expected !== undefined && Object.keys(failure.expected).length > 0)
      lines.push(`${pad}expected: ${shown(failure.expected)}`);
    if (failure.got !== undefined) lines.push(`${pad}got:      ${shown(failure.got)}`);
    for (const mismatch of failure.mismatches) lines.push(`${pad}${mismatch.path}: expected ${mismatch.expected}, got ${mismatch.got}`);
  }
  if (result.at) lines.push(`    at ${result.at}`);
  if (result.note) lines.push(`    note: ${result.note}`);
  for (const note of result.notes) lines.push(`    | ${note}`);
  return lines;
}

export function summaryLine(report: Pick<TestReport, "passed" | "failed">): string {
  return `${report.passed} passed, ${report.failed} failed`;
}

/** The whole report as one JSON value (`--json`). */
export function reportJson(report: TestReport, coverage?: { minPercent?: number; linesPercent?: number }): unknown {
  return {
    passed: report.passed,
    failed: report.failed,
    durationMs: Math.round(report.durationMs),
    results: report.results.map((result) => ({
      file: result.file,
      name: result.name,
      status: result.status,
      durationMs: Math.round(result.durationMs * 100) / 100,
      ...(result.failures.length ? { failures: result.failures } : {}),
      ...(result.at ? { at: result.at } : {}),
      ...(result.notes.length ? { notes: result.notes } : {}),
    })),
    ...(report.coverage
      ? {
          coverage: {
            files: report.coverage.files().map(fileTotals),
            ...(coverage?.linesPercent !== undefined ? { linesPercent: coverage.linesPercent } : {}),
            ...(coverage?.minPercent !== undefined ? { minPercent: coverage.minPercent } : {}),
          },
        }
      : {}),
  };
}

/** JUnit XML: a testsuite per case file, a testcase per case, a failure element with the case's lines. */
export function junitXml(report: TestReport): string {
  const byFile = new Map<string, CaseResult[]>();
  for (const result of report.results) byFile.set(result.file, [...(byFile.get(result.file) ?? []), result]);
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="hookbox test" tests="${report.results.length}" failures="${report.failed}" errors="0" time="${seconds(report.durationMs)}">`,
  ];
  for (const [file, results] of byFile) {
    const failures = results.filter((result) => result.status === "fail").length;
    const time = results.reduce((sum, result) => sum + result.durationMs, 0);
    out.push(`  <testsuite name="${xml(file)}" tests="${results.length}" failures="${failures}" errors="0" time="${seconds(time)}">`);
    for (const result of results) {
      const open = `    <testcase classname="${xml(file)}" name="${xml(result.name)}" time="${seconds(result.durationMs)}"`;
      if (result.status === "pass") {
        out.push(`${open}/>`);
        continue;
      }
      const lines = caseLines(result).slice(1);
      const first = result.failures[0];
      const message = first?.mismatches[0]
        ? `${first.mismatches[0].path}: expected ${first.mismatches[0].expected}, got ${first.mismatches[0].got}`
        : (first?.problem ?? "failed");
      out.push(
        `${open}>`,
        `      <failure message="${xml(message)}" type="hookbox.case">${xml(lines.join("\n"))}</failure>`,
        "    </testcase>",
      );
    }
    out.push("  </testsuite>");
  }
  out.push("</testsuites>");
  return `${out.join("\n")}\n`;
}

/** Text made safe for XML 1.0: markup escaped, characters XML cannot hold dropped. */
function xml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}
