import { HookboxError } from "../errors.js";
import { shutdownTracing } from "../telemetry/tracing.js";
import { commandHelp, overview } from "./help.js";
import { STDOUT_CLOSED_EXIT, stdoutClosed, watchStdout } from "./stdout.js";

type Command = (argv: string[]) => Promise<number>;

/** One module per command, loaded on demand so `hookbox check` does not pay for the sandbox. */
const commands: Record<string, () => Promise<Command>> = {
  run: async () => (await import("./commands/run.js")).runCommand,
  check: async () => (await import("./commands/check.js")).checkCommand,
  init: async () => (await import("./commands/init.js")).initCommand,
  codegen: async () => (await import("./commands/codegen.js")).codegenCommand,
  resume: async () => (await import("./commands/resume.js")).resumeCommand,
  sessions: async () => (await import("./commands/sessions.js")).sessionsCommand,
  serve: async () => (await import("./commands/serve.js")).serveCommand,
  doctor: async () => (await import("./commands/doctor.js")).doctorCommand,
  replay: async () => (await import("./commands/replay.js")).replayCommand,
  test: async () => (await import("./commands/test.js")).testCommand,
};

export async function main(argv: string[]): Promise<number> {
  watchStdout();
  const code = await command(argv);
  // The last lines may meet a closed pipe too: its error arrives after the write, so wait for it.
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
  await new Promise((resolve) => setImmediate(resolve));
  return stdoutClosed.aborted ? STDOUT_CLOSED_EXIT : code;
}

async function command(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? process.stdout : process.stderr).write(`${overview()}\n`);
    return name ? 0 : 2;
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) {
    process.stderr.write(`hookbox: unknown command "${name}"\n${overview()}\n`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(`${commandHelp(name)}\n`);
    return 0;
  }
  try {
    return await (
      await load()
    )(rest);
  } catch (error) {
    // Commands report their own failures; anything reaching here is still one clear line.
    const message =
      error instanceof HookboxError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
    process.stderr.write(`hookbox ${name}: ${message}\n`);
    return 2;
  } finally {
    // Spans still buffered are exported before the process exits (a no-op when tracing is off).
    await shutdownTracing();
  }
}
