import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import openapiTS, { astToString } from "openapi-typescript";
import { api, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * A client typed from the served /v1/openapi.json: openapi-typescript generates the types, tsc checks a small
 * client against them (a wrong field, or a field of another event type, is a compile error), and the same
 * client, compiled, runs against the real server and reads its answers through those types.
 */

let server: ServeProcess;
let dir: string;

const client = `
import type { components, paths } from "./api.js";

type Json<Route extends keyof paths, Method extends keyof paths[Route], Status extends number> = paths[Route][Method] extends {
  responses: { [S in Status]: { content: { "application/json": infer Body } } };
}
  ? Body
  : never;
export type StreamEvent = components["schemas"]["StreamEvent"];

async function call<Body>(base: string, key: string, method: string, path: string, body?: object): Promise<Body> {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: "Bearer " + key, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return (await response.json()) as Body;
}

/** One line per event, as a dashboard shows it: each type's own fields, narrowed by type. */
export function line(event: StreamEvent): string {
  switch (event.type) {
    case "run-started":
      return "started: " + event.prompt;
    case "tool-started":
      return "tool " + event.name + " (attempt " + event.attempt + ")";
    case "tool-finished":
      return "tool " + event.name + " took " + event.durationMs + " ms";
    case "inference-finished":
      return "inference " + event.iteration + ": " + event.toolCalls.length + " calls";
    case "run-finished":
      return "finished " + event.status + " after " + event.iterations;
    case "text-delta":
      return event.delta;
    default:
      return event.type;
  }
}

export async function session(base: string, key: string) {
  const created = await call<Json<"/v1/sessions", "post", 201>>(base, key, "POST", "/v1/sessions", {});
  const started = await call<Json<"/v1/sessions/{sessionId}/runs", "post", 202>>(base, key, "POST", "/v1/sessions/" + created.sessionId + "/runs", {
    prompt: "record both",
  });
  const token = await call<Json<"/v1/runs/{runId}/stream-token", "post", 201>>(base, key, "POST", "/v1/runs/" + started.runId + "/stream-token", {});
  const stream = await fetch(base + token.url);
  const lines = (await stream.text())
    .split("\\n")
    .filter((text) => text.startsWith("data: "))
    .map((text) => line(JSON.parse(text.slice(6)) as StreamEvent));
  const run = await call<Json<"/v1/runs/{runId}", "get", 200>>(base, key, "GET", "/v1/runs/" + started.runId);
  const view = await call<Json<"/v1/sessions/{sessionId}", "get", 200>>(base, key, "GET", "/v1/sessions/" + created.sessionId);
  const list = await call<Json<"/v1/sessions", "get", 200>>(base, key, "GET", "/v1/sessions?limit=1");
  const usage = await call<Json<"/v1/usage", "get", 200>>(base, key, "GET", "/v1/usage");
  return {
    lines,
    status: run.status,
    pauses: run.pauses.length,
    turns: view.turns.map((turn) => turn.runId),
    listed: list.sessions.map((listed) => listed.id),
    more: list.nextCursor !== undefined,
    storedBytes: usage.storedBytes,
  };
}
`;

/** tsc's errors for `files` (name -> source) beside the generated api.ts, strict, as text. */
function typeErrors(files: Record<string, string>): string[] {
  for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), source);
  const program = ts.createProgram(
    Object.keys(files).map((name) => join(dir, name)),
    {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
      skipLibCheck: true,
      types: [],
    },
  );
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (diagnostic) =>
        `${diagnostic.file ? diagnostic.file.fileName.split("/").at(-1) : ""}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`,
    );
}

beforeAll(async () => {
  const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
  server = await startServe({ config: fixture.config, store: fixture.store });
  const document = (await api(server.url, undefined).request("GET", "/v1/openapi.json")).body;
  dir = mkdtempSync(join(tmpdir(), "hookbox-typed-client-"));
  writeFileSync(join(dir, "api.ts"), astToString(await openapiTS(document)));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe("a client typed from /v1/openapi.json (openapi-typescript)", () => {
  it("type-checks, and reads the real server's answers through those types", async () => {
    expect(typeErrors({ "client.ts": client })).toEqual([]);
    const compiled = ts.transpileModule(client, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
    writeFileSync(join(dir, "client.mjs"), compiled.outputText);
    const { session } = (await import(pathToFileURL(join(dir, "client.mjs")).href)) as {
      session(base: string, key: string): Promise<Record<string, unknown>>;
    };
    const answers = await session(server.url, "acme-key");
    expect(answers).toMatchObject({ status: "completed", pauses: 0, listed: [expect.stringMatching(/^sess_/)], more: false });
    expect(answers.lines).toEqual(
      expect.arrayContaining(["started: record both", "tool record (attempt 1)", "inference 1: 2 calls", "finished completed after 2"]),
    );
    expect(answers.storedBytes).toBeGreaterThan(0);
  });

  it("makes a wrong field, or another event type's field, a compile error", () => {
    const errors = typeErrors({
      "wrong.ts": `
import type { components, paths } from "./api.js";
type Run = paths["/v1/runs/{runId}"]["get"]["responses"][200]["content"]["application/json"];
type Created = paths["/v1/sessions"]["post"]["responses"][201]["content"]["application/json"];
export const a = (run: Run) => run.state;
export const b = (created: Created) => created.sessionID;
export function c(event: components["schemas"]["StreamEvent"]) {
  if (event.type === "tool-started") return event.status;
  return event.type === "run-finished" ? event.iterations : 0;
}
export const d = (run: Run): number => run.status;
`,
    });
    expect(errors).toEqual([
      expect.stringMatching(/wrong\.ts: Property 'state' does not exist/),
      expect.stringMatching(/wrong\.ts: Property 'sessionID' does not exist .*Did you mean 'sessionId'/s),
      expect.stringMatching(/wrong\.ts: Property 'status' does not exist on type .*tool-started/s),
      expect.stringMatching(/wrong\.ts: Type .* is not assignable to type 'number'/s),
    ]);
  });
});
