import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { afterEach } from "vitest";
import { hookboxBin, repoRoot } from "../helpers/cli.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { checkAnswersOf } from "./response-check.js";
import { SseMessages } from "../../scripts/sse-messages.mjs";

export interface ServeProcess {
  url: string;
  child: ChildProcessWithoutNullStreams;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The real `hookbox serve` on 127.0.0.1 with a free port (port 0; the URL is read from its stdout). */
export async function startServe(options: {
  config: string;
  /** Absent: the config's `store` (a PostgreSQL URL in the cluster tests). */
  store?: string;
  env?: NodeJS.ProcessEnv;
  /** Node options before the script (e.g. `--import` a measuring module). */
  nodeArgs?: string[];
  /**
   * Bash run first, in the process that then becomes the server (`exec`): `ulimit -n 256` applies to the
   * server, and `$$` is the server's pid.
   */
  shellPrelude?: string;
}): Promise<ServeProcess> {
  const argv = [
    ...(options.nodeArgs ?? []),
    hookboxBin,
    "serve",
    "--port",
    "0",
    ...(options.store ? ["--store", options.store] : []),
    "--config",
    options.config,
  ];
  const [command, args] = options.shellPrelude
    ? ["bash", ["-c", `${options.shellPrelude}\nexec "$0" "$@"`, process.execPath, ...argv]]
    : [process.execPath, argv];
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...options.env },
  });
  let stdout = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (d) => {
      stdout += d;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolve(match[1]);
    });
    void exited.then(({ code }) => reject(new Error(`hookbox serve exited (${code}) before listening: ${stderr}`)));
  });
  // Every answer of this server, to whichever fetch in the test, is checked against the OpenAPI document.
  checkAnswersOf(url);
  return {
    url,
    child,
    exited,
    stderr: () => stderr,
    async stop(signal = "SIGTERM") {
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * The serve processes of a test file's tests (push each one started): killed with SIGKILL after each test, one
 * stopped with SIGSTOP continued first.
 */
export function useServeProcesses(): ServeProcess[] {
  const servers: ServeProcess[] = [];
  afterEach(async () => {
    for (const server of servers) if (server.child.signalCode === null && server.child.exitCode === null) server.child.kill("SIGCONT");
    await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  });
  return servers;
}

export interface Api {
  request(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
}

export function api(url: string, key: string | undefined): Api {
  return {
    async request(method, path, body, headers = {}) {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
          ...headers,
        },
        ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON: returned as text so the assertion shows it */
      }
      return { status: response.status, body: parsed, headers: response.headers };
    },
  };
}

export interface SseMessage {
  id?: string;
  event: HookboxEvent;
}

/**
 * Reads a run's SSE stream until it ends, or until `stopWhen` returns true (then disconnects, like a
 * browser losing its connection). Returns the messages with their `id:` fields.
 */
export async function readEvents(
  url: string,
  key: string | undefined,
  runId: string,
  options: {
    lastEventId?: string;
    /** Appended to the stream's URL (`?token=...`). */
    query?: string;
    stopWhen?: (message: SseMessage) => boolean;
    onMessage?: (message: SseMessage) => void;
  } = {},
): Promise<{ messages: SseMessage[]; status: number; ended: boolean }> {
  const controller = new AbortController();
  const response = await fetch(`${url}/v1/runs/${runId}/events${options.query ?? ""}`, {
    headers: {
      ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
      ...(options.lastEventId !== undefined ? { "last-event-id": options.lastEventId } : {}),
    },
    signal: controller.signal,
  });
  const messages: SseMessage[] = [];
  if (response.status !== 200 || !response.body) {
    await response.text();
    return { messages, status: response.status, ended: true };
  }
  const sse = new SseMessages();
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      for (const { id, data } of sse.push(chunk)) {
        const event = JSON.parse(data) as HookboxEvent;
        const message = { ...(id !== undefined ? { id } : {}), event };
        messages.push(message);
        options.onMessage?.(message);
        if (options.stopWhen?.(message)) {
          controller.abort();
          return { messages, status: 200, ended: false };
        }
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  }
  return { messages, status: 200, ended: true };
}
