import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { HookboxError } from "../../errors.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { wallModeFlag, type WallMode } from "../../sandbox/wall/mode.js";
import { failUsage } from "../exit.js";
import { CaseFileError, findCaseFiles, loadCaseFile } from "../../testing/case-files.js";
import type { TestCase } from "../../testing/case-schema.js";
import { runCases } from "../../testing/runner.js";
import { caseLines, junitXml, reportJson, summaryLine } from "../../testing/report.js";
import { coverageSummary, lcov, overallLines, percent } from "../../testing/coverage/report.js";

const usage = "usage: hookbox test [PATHS...] [--json | --reporter text|json|junit] [--coverage] [--coverage-min PERCENT]";
const recordUsage = "usage: hookbox test --record --store FILE --session ID [--run ID]... [--script FILE]... [--out FILE]";

interface TestFlags {
  paths: string[];
  reporter: "text" | "json" | "junit";
  coverage: boolean;
  coverageFile: string;
  coverageMin?: number;
  wall?: WallMode;
  record?: { store: string; session: string; runs?: string[]; scripts: string[]; out?: string };
}

/**
 * `hookbox test`: runs case files in the sandbox. Exit 0 when every case passed (and coverage reached
 * --coverage-min), 1 when one failed (or coverage fell short), 2 for bad flags or a case file that cannot be used.
 */
export async function testCommand(argv: string[]): Promise<number> {
  let flags: TestFlags;
  try {
    flags = parseTestFlags(argv);
  } catch (error) {
    return failUsage("test", error);
  }
  if (flags.record) return record(flags.record);

  let files: { file: string; cases: TestCase[] }[];
  try {
    const found = findCaseFiles(flags.paths);
    if (found.length === 0)
      throw new HookboxError(
        "USAGE",
        `no case files (*.cases.json, *.cases.ts) under ${flags.paths.length ? flags.paths.join(", ") : "."}`,
      );
    files = await loadAll(found);
  } catch (error) {
    if (error instanceof CaseFileError || (error instanceof HookboxError && error.message.includes("\n"))) {
      process.stderr.write(
        `${error.message
          .split("\n")
          .map((line) => `hookbox test: ${line}`)
          .join("\n")}\n`,
      );
      return 2;
    }
    return failUsage("test", error);
  }

  let pool;
  try {
    pool = createSandboxPool(flags.wall ? { wall: flags.wall } : {});
  } catch (error) {
    return failUsage("test", error);
  }
  const text = flags.reporter === "text";
  try {
    const report = await runCases(files, {
      pool,
      coverage: flags.coverage,
      ...(text ? { onResult: (result) => process.stdout.write(`${caseLines(result).join("\n")}\n`) } : {}),
    });
    let coverageFailed = false;
    let linesPercent: number | undefined;
    if (report.coverage) {
      const covered = report.coverage.files();
      mkdirSync(dirname(resolve(flags.coverageFile)), { recursive: true });
      writeFileSync(flags.coverageFile, lcov(covered));
      linesPercent = Math.round(percent(overallLines(covered)) * 10) / 10;
      coverageFailed = flags.coverageMin !== undefined && linesPercent < flags.coverageMin;
      const summary = `${coverageSummary(covered)}\nlcov: ${flags.coverageFile}\n${
        coverageFailed ? `coverage ${linesPercent}% of lines is under --coverage-min ${flags.coverageMin}%\n` : ""
      }`;
      (text ? process.stdout : process.stderr).write(`${text ? "\n" : ""}${summary}`);
    }
    if (text) process.stdout.write(`${"-".repeat(40)}\n${summaryLine(report)}\n`);
    else if (flags.reporter === "json")
      process.stdout.write(
        `${JSON.stringify(reportJson(report, { ...(flags.coverageMin !== undefined ? { minPercent: flags.coverageMin } : {}), ...(linesPercent !== undefined ? { linesPercent } : {}) }))}\n`,
      );
    else {
      process.stdout.write(junitXml(report));
      process.stderr.write(`${summaryLine(report)}\n`);
    }
    return report.failed > 0 || coverageFailed ? 1 : 0;
  } finally {
    await pool.close();
  }
}

/** Every case file read and checked before anything runs; all problems of all files in one error. */
async function loadAll(found: string[]): Promise<{ file: string; cases: TestCase[] }[]> {
  const files: { file: string; cases: TestCase[] }[] = [];
  const problems: string[] = [];
  for (const file of found) {
    try {
      files.push({ file, cases: await loadCaseFile(file) });
    } catch (error) {
      if (!(error instanceof HookboxError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length) throw new HookboxError("CONFIG", problems.join("\n"));
  return files;
}

async function record(options: NonNullable<TestFlags["record"]>): Promise<number> {
  const { openStore } = await import("../../store/index.js");
  const { recordedCases } = await import("../../policy/recorded-cases.js");
  const out = options.out ?? `${options.session.replace(/[^A-Za-z0-9_.-]/g, "_")}.cases.json`;
  if (existsSync(out)) return failUsage("test", new HookboxError("USAGE", `${out} already exists; choose another --out`));
  if (!existsSync(options.store)) return failUsage("test", new HookboxError("USAGE", `--store ${options.store}: no such file`));
  let store;
  try {
    store = openStore(options.store);
  } catch (error) {
    return failUsage("test", error);
  }
  try {
    if (!(await store.getSession(options.session)))
      return failUsage("test", new HookboxError("NOT_FOUND", `${options.store} has no session ${options.session}`));
    if (options.runs) {
      const ofSession = new Set((await store.listRuns(options.session)).map((run) => run.id));
      const stranger = options.runs.find((runId) => !ofSession.has(runId));
      if (stranger !== undefined)
        return failUsage("test", new HookboxError("NOT_FOUND", `session ${options.session} has no run ${stranger}`));
    }
    const base = dirname(resolve(out));
    const scripts = options.scripts.map((script) => relative(base, resolve(script)) || script);
    const recorded = await recordedCases(store, options.session, { scripts, ...(options.runs ? { runIds: options.runs } : {}) });
    if (recorded.runs === 0)
      return failUsage("test", new HookboxError("NOT_FOUND", `session ${options.session} has no recorded hook calls to make cases of`));
    mkdirSync(base, { recursive: true });
    writeFileSync(out, `${JSON.stringify(recorded.file, null, 2)}\n`);
    process.stdout.write(
      `wrote ${out}: ${recorded.runs} case${recorded.runs === 1 ? "" : "s"}, ${recorded.calls} hook call${recorded.calls === 1 ? "" : "s"}` +
        `${recorded.truncated ? " (the session has more than one case file holds: the rest were left out)" : ""}\n` +
        `${scripts.length ? "" : `no --script given: the cases run the script beside ${out} (name them alike), or add "script" to it\n`}`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

function parseTestFlags(argv: string[]): TestFlags {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      json: { type: "boolean" },
      reporter: { type: "string" },
      coverage: { type: "boolean" },
      "coverage-file": { type: "string" },
      "coverage-min": { type: "string" },
      record: { type: "boolean" },
      store: { type: "string" },
      session: { type: "string" },
      script: { type: "string", multiple: true },
      run: { type: "string", multiple: true },
      out: { type: "string" },
      wall: { type: "string" },
    },
    allowPositionals: true,
    strict: true,
  });
  const wall = values.wall === undefined ? undefined : wallModeFlag(values.wall);
  if (values.record) {
    if (!values.store || !values.session) throw new HookboxError("USAGE", `--record needs --store and --session (${recordUsage})`);
    if (positionals.length) throw new HookboxError("USAGE", `--record takes no paths (${recordUsage})`);
    return {
      paths: [],
      reporter: "text",
      coverage: false,
      coverageFile: "",
      record: {
        store: values.store,
        session: values.session,
        scripts: values.script ?? [],
        ...(values.run ? { runs: values.run } : {}),
        ...(values.out ? { out: values.out } : {}),
      },
    };
  }
  for (const flag of ["store", "session", "run", "script", "out"] as const)
    if (values[flag] !== undefined) throw new HookboxError("USAGE", `--${flag} goes with --record (${recordUsage})`);
  const reporter = values.json ? "json" : (values.reporter ?? "text");
  if (values.json && values.reporter !== undefined && values.reporter !== "json")
    throw new HookboxError("USAGE", `--json and --reporter ${values.reporter} disagree (${usage})`);
  if (reporter !== "text" && reporter !== "json" && reporter !== "junit")
    throw new HookboxError("USAGE", `--reporter must be text, json or junit, got "${reporter}" (${usage})`);
  let coverageMin: number | undefined;
  if (values["coverage-min"] !== undefined) {
    const raw = values["coverage-min"];
    coverageMin = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || coverageMin > 100)
      throw new HookboxError("USAGE", `--coverage-min must be a percentage from 0 to 100, got "${raw}"`);
  }
  return {
    paths: positionals,
    reporter,
    coverage: values.coverage === true || coverageMin !== undefined || values["coverage-file"] !== undefined,
    coverageFile: values["coverage-file"] ?? "coverage/lcov.info",
    ...(coverageMin !== undefined ? { coverageMin } : {}),
    ...(wall ? { wall } : {}),
  };
}
