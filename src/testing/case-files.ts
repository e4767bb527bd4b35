import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { z } from "zod";
import { HookboxError } from "../errors.js";
import { parseJsonText } from "../contracts/json-text.js";
import { loadServerConfig } from "../server/config.js";
import type { Json } from "../turns/json.js";
import {
  CaseFileSchema,
  HookExpectationSchema,
  MiddlewareExpectationSchema,
  RunExpectationSchema,
  ToolExpectationSchema,
  type CallStep,
  type CallTarget,
  type CaseInput,
  type Check,
  type Fixtures,
  type Grants,
  type ScriptStack,
  type TestCase,
} from "./case-schema.js";
import { expectationProblems } from "./match.js";
import { fixtureProblems } from "./fixtures.js";

/*
 * Finding case files beside scripts and reading them into test cases. Every problem of a file is reported before
 * anything runs, each naming the file, the case (by name and index) and the field.
 */

const CASE_FILE = /\.cases\.(json|ts|mts)$/;
const SCRIPT_EXTENSIONS = [".ts", ".mts", ".js", ".mjs"];

/** A case file that cannot be used: every problem found in it. */
export class CaseFileError extends HookboxError {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super("CONFIG", problems.map((problem) => `${file}: ${problem}`).join("\n"), { file });
  }
}

/**
 * The case files under `paths`: a directory is searched (not node_modules or dot directories), a case file is
 * taken as it is, and a script (`policy.ts`) stands for the case files beside it (`policy.cases.json`,
 * `policy.cases.ts`). Sorted, each once.
 */
export function findCaseFiles(paths: string[]): string[] {
  const found = new Set<string>();
  for (const path of paths.length ? paths : ["."]) {
    let info;
    try {
      info = statSync(path);
    } catch {
      throw new HookboxError("USAGE", `${path}: no such file or directory`);
    }
    if (info.isDirectory()) for (const file of walk(path)) found.add(file);
    else if (CASE_FILE.test(path)) found.add(path);
    else {
      const stem = path.replace(/\.[mc]?[jt]s$/, "");
      const beside = ["json", "ts", "mts"].map((ext) => `${stem}.cases.${ext}`).filter((file) => existsSync(file));
      if (beside.length === 0)
        throw new HookboxError("USAGE", `${path}: not a case file, and no ${basename(stem)}.cases.json or .cases.ts beside it`);
      for (const file of beside) found.add(file);
    }
  }
  return [...found].sort();
}

function walk(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...walk(path));
    else if (entry.isFile() && CASE_FILE.test(entry.name)) files.push(path);
  }
  return files;
}

/** Reads a case file (`.cases.ts` through Node's own TypeScript support: erasable syntax only). */
export async function readCaseFile(file: string): Promise<unknown> {
  if (file.endsWith(".json")) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new CaseFileError(file, [`cannot be read: ${(error as Error).message}`]);
    }
    try {
      return parseJsonText(text);
    } catch (error) {
      throw new CaseFileError(file, [`not valid JSON: ${(error as Error).message}`]);
    }
  }
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  } catch (error) {
    throw new CaseFileError(file, [`cannot be loaded: ${(error as Error).message.split("\n")[0]}`]);
  }
  if (module.default === undefined) throw new CaseFileError(file, ["has no default export: write `export default defineCases({...})`"]);
  return module.default;
}

/** The cases of one file, resolved and checked; a CaseFileError lists every problem. */
export async function loadCaseFile(file: string): Promise<TestCase[]> {
  return caseFileCases(file, await readCaseFile(file));
}

export function caseFileCases(file: string, raw: unknown): TestCase[] {
  const parsed = CaseFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new CaseFileError(
      file,
      parsed.error.issues.slice(0, 10).map((issue) => issueText(raw, issue)),
    );
  const data = parsed.data;
  const dir = dirname(resolve(file));
  const problems: string[] = [];
  const names = new Map<string, number>();
  const cases: TestCase[] = [];
  // The file's scripts (its own fields, else the script beside it), resolved once; problems named at file level.
  const fileStack =
    data.cases.every((entry) => entry.script ?? entry.scripts ?? entry.tenant) && !(data.script ?? data.scripts ?? data.tenant)
      ? undefined
      : resolveStack(file, dir, data, data.grants ?? {}, data.limits, (field, problem) => problems.push(`${field}: ${problem}`));
  data.cases.forEach((entry, index) => {
    const at = caseLabel(entry.name, index);
    const fail = (field: string, problem: string) => problems.push(`${at}: ${field}: ${problem}`);
    if (names.has(entry.name)) fail("name", `another case has this name (cases[${names.get(entry.name)}])`);
    names.set(entry.name, index);
    const ownStack = entry.script !== undefined || entry.scripts !== undefined || entry.tenant !== undefined;
    const scripts = ownStack ? resolveStack(file, dir, entry, data.grants ?? {}, data.limits, fail) : fileStack;
    const fixtures = mergeFixtures(data.fixtures, entry.fixtures);
    if (scripts) for (const problem of fixtureProblems(fixtures, scripts.grants)) fail(`fixtures.${problem.field}`, problem.message);
    const targets = (["hook", "tool", "middleware", "run", "steps"] as const).filter((key) => entry[key] !== undefined);
    if (targets.length !== 1) {
      fail(targets.length ? targets.join(", ") : "hook", "give exactly one of hook, tool, middleware, run or steps");
      return;
    }
    if (!scripts) return;
    const base = { file, index, name: entry.name, ...(entry.note ? { note: entry.note } : {}), scripts, fixtures };
    if (entry.run !== undefined) {
      if (entry.input !== undefined) fail("input", "a run case takes its input from run.prompt and run.model");
      const expect = checkedExpect(RunExpectationSchema, entry.expect ?? {}, "expect", fail);
      cases.push({ ...base, body: { kind: "run", run: entry.run, expect, ...(entry.check ? { check: entry.check as Check } : {}) } });
      return;
    }
    const steps: CallStep[] = [];
    const calls = entry.steps ?? [entry];
    calls.forEach((step, s) => {
      const prefix = entry.steps ? `steps[${s}].` : "";
      const target: CallTarget = step.hook
        ? { kind: "hook", hook: step.hook }
        : step.tool
          ? { kind: "tool", tool: step.tool }
          : step.middleware
            ? { kind: "middleware", middleware: step.middleware }
            : (undefined as never);
      if (entry.steps && [step.hook, step.tool, step.middleware].filter(Boolean).length !== 1) {
        fail(`${prefix}hook`, "give exactly one of hook, tool or middleware");
        return;
      }
      const input = step.input ?? {};
      for (const problem of inputProblems(target, input))
        fail(`${prefix}input${problem.field ? `.${problem.field}` : ""}`, problem.message);
      const schema =
        target.kind === "hook" ? HookExpectationSchema : target.kind === "tool" ? ToolExpectationSchema : MiddlewareExpectationSchema;
      const expect = checkedExpect(schema, (step.expect as Record<string, unknown> | undefined) ?? {}, `${prefix}expect`, fail);
      if (Object.keys(expect).length === 0 && !step.check)
        fail(`${prefix}expect`, "say what is expected (expect, or check in a .cases.ts file)");
      steps.push({ target, input, expect, ...(step.check ? { check: step.check as Check } : {}) });
    });
    cases.push({ ...base, body: { kind: "calls", steps } });
  });
  if (problems.length) throw new CaseFileError(file, problems);
  return cases;
}

function caseLabel(name: string, index: number): string {
  return `case ${JSON.stringify(name)} (cases[${index}])`;
}

/** A zod issue as "case "x" (cases[2]): expect.action: ..." (or the file-level field). */
function issueText(raw: unknown, issue: z.core.$ZodIssue): string {
  const path = issue.path;
  let where = "";
  let rest = path;
  if (path[0] === "cases" && typeof path[1] === "number") {
    const entry = (raw as { cases?: { name?: unknown }[] }).cases?.[path[1]];
    const named = typeof entry?.name === "string" ? entry.name : "(unnamed)";
    where = `${caseLabel(named, path[1])}: `;
    rest = path.slice(2);
  }
  const field = fieldName(rest);
  const detail =
    issue.code === "unrecognized_keys"
      ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((key) => `"${key}"`).join(", ")}`
      : issue.message;
  return `${where}${field || "(the file)"}: ${detail}`;
}

function fieldName(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join("");
}

function checkedExpect(
  schema: z.ZodType,
  expect: Record<string, unknown>,
  field: string,
  fail: (field: string, problem: string) => void,
): Record<string, Json> {
  const parsed = schema.safeParse(expect);
  if (!parsed.success) {
    for (const issue of parsed.error.issues.slice(0, 5)) {
      const detail =
        issue.code === "unrecognized_keys"
          ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((key) => `"${key}"`).join(", ")} for this kind of case`
          : issue.message;
      fail([field, fieldName(issue.path)].filter(Boolean).join("."), detail);
    }
    return {};
  }
  for (const problem of expectationProblems(expect, field)) {
    const [path, ...message] = problem.split(": ");
    fail(path!, message.join(": "));
  }
  return expect as Record<string, Json>;
}

/** What each kind of call needs in its input. */
function inputProblems(target: CallTarget, input: CaseInput): { field: string; message: string }[] {
  if (input.payload !== undefined) {
    const others = Object.keys(input).filter((key) => key !== "payload");
    return others.length ? [{ field: others[0]!, message: "a case with a payload takes nothing else: the payload is used as it is" }] : [];
  }
  const problems: { field: string; message: string }[] = [];
  const need = (field: keyof CaseInput, why: string) => {
    if (input[field] === undefined) problems.push({ field, message: `required ${why}` });
  };
  if (target.kind === "hook") {
    if (["beforeToolCall", "afterToolCall", "onToolError"].includes(target.hook)) need("tool", `for ${target.hook} (the tool's name)`);
    if (target.hook === "onToolError") need("error", "for onToolError (the tool's error)");
    if (target.hook === "beforeFinish") need("text", "for beforeFinish (the answer the run would finish with)");
  }
  if (target.kind === "middleware" && input.turn === undefined && input.messages === undefined)
    problems.push({ field: "messages", message: "required for a middleware (or give the whole turn)" });
  if (target.kind === "middleware" && input.turn !== undefined && input.messages !== undefined)
    problems.push({ field: "messages", message: "give the turn or messages, not both" });
  return problems;
}

type StackFields = { script?: string; scripts?: string[]; tenant?: { config: string; name: string } };

/** The case's scripts (its own, else the file's, else the script beside the case file), paths made absolute. */
function resolveStack(
  file: string,
  dir: string,
  fields: StackFields,
  grants: Grants,
  limits: ScriptStack["limits"],
  fail: (field: string, problem: string) => void,
): ScriptStack | undefined {
  const given = [fields.script, fields.scripts, fields.tenant].filter((value) => value !== undefined).length;
  if (given > 1) {
    fail("script", "give one of script, scripts or tenant");
    return undefined;
  }
  if (fields.tenant) {
    const configFile = resolve(dir, fields.tenant.config);
    let config;
    try {
      config = loadServerConfig(configFile, { requireKeys: false });
    } catch (error) {
      fail("tenant.config", (error as Error).message);
      return undefined;
    }
    const tenant = config.tenants.find((entry) => entry.config.name === fields.tenant!.name);
    if (tenant === undefined) {
      fail("tenant.name", `${fields.tenant.config} has no tenant named ${JSON.stringify(fields.tenant.name)}`);
      return undefined;
    }
    const capabilities = tenant.config.capabilities ?? {};
    const paths = tenant.config.scripts.map((source) => (source as { path: string }).path);
    return {
      key: `tenant:${configFile}#${fields.tenant.name}`,
      paths,
      grants: {
        ...(capabilities.egress ? { egress: capabilities.egress } : {}),
        ...(capabilities.guardModel !== undefined ? { guardModel: true } : {}),
        ...(capabilities.kv === false ? { kv: false } : {}),
      },
      ...(tenant.config.limits ? { limits: tenant.config.limits } : {}),
      tenant: { config: configFile, name: fields.tenant.name },
    };
  }
  const named = fields.scripts ?? (fields.script ? [fields.script] : undefined);
  const paths = named ? named.map((script) => resolve(dir, script)) : besideScript(file);
  if (paths === undefined) {
    fail("script", `no script named, and no script beside ${basename(file)} (${basename(file).replace(CASE_FILE, "")}.ts or .js)`);
    return undefined;
  }
  for (const [i, path] of paths.entries()) {
    if (!existsSync(path)) {
      fail(named && fields.scripts ? `scripts[${i}]` : "script", `${relative(process.cwd(), path) || path} does not exist`);
      return undefined;
    }
  }
  return { key: `scripts:${paths.join("\u0000")}`, paths, grants, ...(limits ? { limits } : {}) };
}

function besideScript(file: string): string[] | undefined {
  const stem = resolve(file).replace(CASE_FILE, "");
  const script = SCRIPT_EXTENSIONS.map((ext) => stem + ext).find((path) => existsSync(path));
  return script ? [script] : undefined;
}

/** The file's fixtures under the case's: fetch answers and kv entries by key, the rest replaced. */
function mergeFixtures(file: Fixtures | undefined, own: Fixtures | undefined): Fixtures {
  if (!file) return own ?? {};
  if (!own) return file;
  return {
    ...file,
    ...own,
    ...(file.fetch || own.fetch ? { fetch: { ...file.fetch, ...own.fetch } } : {}),
    ...(file.kv || own.kv ? { kv: { ...file.kv, ...own.kv } } : {}),
  };
}
