/*
 * `hookbox --help` and `hookbox <command> --help` (docs/cli.md). Each command's text lists every flag it accepts;
 * test/cli/help.test.ts holds each command's parser to its text, and the docs test checks the docs' commands
 * against it.
 */

type Option = readonly [flag: string, meaning: string];

const wall: Option = ["--wall auto|required|none", "the sandbox's second wall around its workers (default auto)"];

const commands: Record<string, { usage: string; summary: string; options: readonly Option[] }> = {
  run: {
    usage: "run <script...> --prompt TEXT --model SPEC [options]",
    summary: "run one tool loop with the scripts loaded into one tenant, and print its events",
    options: [
      ["--prompt TEXT", "the user's message (required)"],
      ["--model scripted:FILE", "an offline, deterministic model replaying FILE (required: this or the next)"],
      ["--model openai-compatible:MODEL", "an OpenAI-compatible server, with --base-url URL and --api-key-env VAR"],
      ["--base-url URL", "the OpenAI-compatible server's base URL"],
      ["--api-key-env VAR", "the environment variable holding the API key (default OPENAI_API_KEY)"],
      ["--host-tools MODULE", "a trusted ES module: default export an array of host tools"],
      ["--user-context JSON", "extra user context (a JSON object)"],
      ["--user-context-to-model WHAT", "what the model sees of it: request (default), none, or FIELD,..."],
      ["--system TEXT|@FILE", "instructions, sent first as system text on every model call"],
      ["--temperature N", "sampling temperature (0-2)"],
      ["--max-output-tokens N", "output tokens per model call"],
      ["--top-p N", "nucleus sampling (0-1)"],
      ["--seed N", "sampling seed, where the provider takes one"],
      ["--stop-sequence TEXT", "the model stops at TEXT; repeatable"],
      ["--tool-choice CHOICE", "auto, none, required or tool:NAME"],
      ["--tenant NAME", "the tenant the scripts run as (default default)"],
      ["--tags k=v,...", "tags every context object carries"],
      ["--max-iterations N", "model calls per run (default 20)"],
      ["--max-parallel-tools N", "tool calls of one response run at once (default 4)"],
      ["--tool-timeout-ms N", "per tool call (default none)"],
      ["--memory-mb N", "the tenant's isolate memory (default 64)"],
      ["--cpu-ms N", "CPU time per sandbox callback (default 200)"],
      ["--wall-ms N", "wall time per sandbox callback (default 5000)"],
      ["--step", "pause after an inference with tool calls, and after tools"],
      ["--pause-timeout-ms N", "a pause continues by itself after this long (default 30000)"],
      ["--approval-timeout-ms N", "an unanswered approval is a rejection after this long (default 300000)"],
      ["--max-finish-continues N", "times beforeFinish may send the answer back (default 3)"],
      ["--json", "JSON Lines events on stdout and nothing else"],
      ["--max-tokens N", "input plus output tokens for the whole run"],
      ["--max-cost-usd USD", "cost of the whole run by --pricing"],
      ["--pricing MODEL=IN,OUT", "USD per million input/output tokens of MODEL (* for any); repeatable"],
      ["--model-retries N", "retries per model call for 429, 5xx and network errors (default 2)"],
      ["--fallback-model SPEC", "a model used once the retries are spent; --fallback-base-url URL"],
      ["--fallback-base-url URL", "the fallback model's base URL (default --base-url)"],
      ["--traceparent VALUE", "a W3C traceparent: the run's trace continues the caller's"],
      ["--store FILE|URL", "persist the session in a SQLite file or a postgres:// database"],
      ["--session ID", "with --store: continue this session"],
      ["--egress URL", "a URL prefix ctx.fetch may reach, or a JSON entry; repeatable"],
      ["--guard-model SPEC", "the model ctx.model.generate calls (scripted:FILE, openai-compatible:MODEL, or run)"],
      ["--context-tokens N", "tokens one model call may be sent, estimated (default 100000)"],
      ["--context-bytes N", "the same bound in characters of the turn's JSON text"],
      ["--summarize-context", "summarize what leaves the context with the --guard-model"],
      wall,
    ],
  },
  check: {
    usage: "check <script...>",
    summary: "type-check scripts against the hookbox types, and the load-time checks run would make",
    options: [],
  },
  init: { usage: "init DIR", summary: "create a script project (tsconfig, policy.ts, model.json, README)", options: [] },
  codegen: {
    usage: "codegen [--check] [--spec FILE] [--out DIR]",
    summary: "generate key constants and .d.ts from codegen/spec.json (maintainers of this repository)",
    options: [
      ["--check", "write nothing; exit 1 naming each generated file that differs"],
      ["--spec FILE", "another spec (default codegen/spec.json)"],
      ["--out DIR", "another output root (default the package)"],
    ],
  },
  resume: {
    usage: "resume --store FILE|URL --session ID [options]",
    summary: "continue a session's interrupted run",
    options: [
      ["--store FILE|URL", "the store: a SQLite file or a postgres:// URL (required)"],
      ["--session ID", "the session (required)"],
      ["--config FILE", "a serve config whose tenant settings apply"],
      ["--json", "JSON Lines events on stdout and nothing else"],
      ["--approval-timeout-ms N", "an unanswered approval is a rejection after this long (default: the run's own)"],
      wall,
    ],
  },
  sessions: {
    usage: "sessions --store FILE|URL [--tenant NAME] [--json] | --delete ID... | --prune --config FILE",
    summary: "list stored sessions with their last run; delete sessions, or what the config's retention would",
    options: [
      ["--store FILE|URL", "the store: a SQLite file or a postgres:// URL (required)"],
      ["--tenant NAME", "only this tenant's sessions (listing)"],
      ["--json", "one JSON object per line"],
      ["--delete ID", "delete this session with its runs, freeing its bytes; repeatable"],
      ["--prune", "delete each tenant's sessions idle longer than its retention (with --config)"],
      ["--config FILE", "the serve config whose tenants' retention --prune applies"],
    ],
  },
  serve: {
    usage:
      "serve --port N [--store FILE|URL] --config FILE [--host ADDRESS] [--wall auto|required|none] [--strict] [--script-cache DIR|none]",
    summary: "the multi-tenant HTTP server",
    options: [
      ["--port N", "the port (0: a free one) (required)"],
      ["--store FILE|URL", "a SQLite file or a postgres:// URL shared by many servers (default the config's store; one is required)"],
      ["--config FILE", "the tenants' config (required)"],
      ["--host ADDRESS", "the address to listen on (default the config's, else 127.0.0.1)"],
      wall,
      ["--strict", "build every tenant's scripts and models before listening; exit 2 at the first that fails"],
      ["--script-cache DIR|none", "where bundles are kept for the next start (default the config's, else ~/.cache/hookbox/scripts)"],
    ],
  },
  doctor: {
    usage: "doctor [--json] [--wall auto|required|none]",
    summary: "check the protections sandbox workers get on this host",
    options: [["--json", "one JSON object instead of one line per check"], wall],
  },
  replay: {
    usage: "replay --store FILE|URL --scripts FILE... [--session ID | --tenant NAME] [--since ISO] [--json]",
    summary: "re-evaluate scripts' hooks against recorded runs",
    options: [
      ["--store FILE|URL", "the store: a SQLite file or a postgres:// URL (required)"],
      ["--scripts FILE...", "the scripts to evaluate (required)"],
      ["--session ID", "only this session's runs"],
      ["--tenant NAME", "only this tenant's runs"],
      ["--since ISO", "only runs started at or after this ISO date or time"],
      ["--json", "one JSON object per changed call, then the summary"],
    ],
  },
  test: {
    usage: "test [PATHS...] [options]",
    summary: "run the cases (*.cases.json, *.cases.ts) beside scripts, each in the sandbox; or record a session as cases",
    options: [
      ["--json", "one JSON report on stdout (as --reporter json)"],
      ["--reporter text|json|junit", "what stdout carries: lines per case (default), one JSON report, or JUnit XML"],
      ["--coverage", "count the lines, branches and functions the cases reach; print a summary, write lcov"],
      ["--coverage-file FILE", "where the lcov goes (default coverage/lcov.info)"],
      ["--coverage-min PERCENT", "exit 1 when fewer lines than this are reached (turns --coverage on)"],
      ["--record", "write a case file from a recorded session instead (with --store and --session)"],
      ["--store FILE", "with --record: the SQLite store"],
      ["--session ID", "with --record: the session whose runs become cases"],
      ["--run ID", "with --record: only this run of the session (repeatable); cases keep the session's run numbers"],
      ["--script FILE", "with --record: the script the cases run (repeatable: a stack, in load order)"],
      ["--out FILE", "with --record: the case file to write (default SESSION.cases.json; refuses to overwrite)"],
      wall,
    ],
  },
};

export const commandNames = Object.keys(commands);

/** `hookbox --help`: one line per command. */
export function overview(): string {
  const width = Math.max(...Object.values(commands).map((command) => command.usage.length)) + 2;
  const lines = Object.values(commands).map((command) => `  ${command.usage.padEnd(width)}${command.summary}`);
  return `usage: hookbox <command> [options]\ncommands:\n${lines.join("\n")}\n\nhookbox <command> --help lists a command's options.`;
}

/** `hookbox <command> --help`: its usage, what it does and every option it accepts. */
export function commandHelp(name: string): string {
  const command = commands[name]!;
  const width = Math.max(0, ...command.options.map(([flag]) => flag.length)) + 2;
  const options = command.options.map(([flag, meaning]) => `  ${flag.padEnd(width)}${meaning}`);
  return [`usage: hookbox ${command.usage}`, command.summary, ...(options.length ? ["options:", ...options] : [])].join("\n");
}
