import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";
import { startLoopback, type Loopback } from "./loopback.js";

/*
 * ctx.fetch through the real CLI against a loopback server: the egress list, the host-side header (the
 * server gets it; the script never sees its value), redirects, the body bound and the per-run count.
 */

const SECRET = "s3cr3t-guard-key-5d1e0c";

const policy = `import { defineScript } from "hookbox";
export default defineScript({
  name: "guard",
  onHookError: "fail-open",
  hooks: {
    async beforeToolCall(p) {
      const base = p.call.args.base as string;
      if (p.call.args.mode === "uncaught") {
        await p.fetch(base + "/outside/x");
        return undefined;
      }
      if (p.call.args.mode === "flood") {
        let made = 0;
        let refused = "";
        for (let i = 0; i < 60; i++) {
          try { await p.fetch(base + "/api/ok"); made++; } catch (e) { refused = (e as any).code + " " + (e as Error).message; break; }
        }
        console.log(JSON.stringify({ made, refused }));
        return undefined;
      }
      const results: unknown[] = [];
      for (const path of ["/api/ok", "/api/echo", "/outside/x", "/api/redirect-in", "/api/redirect-out", "/api/big", "/api/../outside/y", "/api%2F..%2Foutside"]) {
        try {
          const r = await p.fetch(base + path, { headers: { authorization: "Bearer forged", "x-script": "yes" } });
          results.push({ path, status: r.status, body: r.body.slice(0, 200), headers: r.headers, json: path === "/api/ok" ? r.json() : undefined });
        } catch (e) {
          results.push({ path, code: (e as any).code, message: (e as Error).message });
        }
      }
      try { await p.fetch("http://user:pw@" + base.slice(7) + "/api/ok"); } catch (e) { results.push({ path: "userinfo", code: (e as any).code }); }
      console.log(JSON.stringify(results));
      return undefined;
    },
  },
});
`;

let loopback: Loopback;
let dir: string;

beforeAll(async () => {
  loopback = await startLoopback();
  dir = tmp("hookbox-fetch-");
  writeFileSync(join(dir, "guard.ts"), policy);
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "refund", description: "r", parameters: { type: "object" }, handler: async (args) => ({ refunded: true }) }];`,
  );
});
afterAll(() => loopback.close());

function model(name: string, args: Record<string, unknown>[]): string {
  const file = join(dir, `${name}.json`);
  const toolCalls = args.map((a, i) => ({ id: `c${i + 1}`, name: "refund", args: { base: loopback.url, ...a } }));
  writeFileSync(file, JSON.stringify({ steps: [{ toolCalls }, { text: "done" }] }));
  return file;
}

// The loopback server stands for a partner on the operator's own network: the entry allows its private address.
const egress = () =>
  JSON.stringify({
    url: `${loopback.url}/api/`,
    allowPrivate: true,
    headers: { authorization: { env: "GUARD_KEY", prefix: "Bearer " } },
  });

async function run(modelFile: string, extra: string[] = []) {
  const result = await runCli(
    [
      "run",
      join(dir, "guard.ts"),
      "--prompt",
      "refund",
      "--model",
      `scripted:${modelFile}`,
      "--host-tools",
      join(dir, "tools.mjs"),
      "--json",
      "--egress",
      egress(),
      ...extra,
    ],
    { env: { GUARD_KEY: SECRET } },
  );
  return { ...result, events: jsonLines(result.stdout) };
}

describe("ctx.fetch through the CLI", () => {
  it("allows only the egress list, adds the host-side header the script never sees, refuses the rest with clear errors", async () => {
    await loopback.clear();
    const { code, stdout, stderr, events } = await run(model("main", [{}]));
    expect(code, stderr).toBe(0);
    const log = events.find((e) => e.type === "log");
    const results = JSON.parse(log.message) as Record<string, any>[];
    const byPath = Object.fromEntries(results.map((r) => [r.path, r]));

    expect(byPath["/api/ok"]).toMatchObject({ status: 200, json: { verdict: "fine" } });
    // The server got the host's header, not the script's forged one, and the script's other headers.
    const received = await loopback.received();
    const ok = received.find((r) => r.path === "/api/ok")!;
    expect(ok.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(ok.headers["x-script"]).toBe("yes");
    // An echoing service cannot hand the secret back: body and headers are redacted.
    expect(byPath["/api/echo"].status).toBe(200);
    expect(byPath["/api/echo"].body).toContain("[redacted]");
    expect(byPath["/api/echo"].headers["x-echo-auth"]).toBe("Bearer [redacted]");

    expect(byPath["/outside/x"]).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(byPath["/outside/x"].message).toContain(`${loopback.url}/outside/x is denied`);
    expect(byPath["/api/redirect-in"]).toMatchObject({ status: 200 });
    expect(byPath["/api/redirect-out"]).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(byPath["/api/redirect-out"].message).toMatch(/outside\/x is denied: a redirect left the egress list/);
    expect(byPath["/api/big"]).toMatchObject({ code: "CAPABILITY_QUOTA" });
    expect(byPath["/api/big"].message).toContain("exceeds 1048576 bytes");
    // Dot segments are resolved before the check; encoded slashes are refused.
    expect(byPath["/api/../outside/y"]).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(byPath["/api%2F..%2Foutside"]).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(byPath.userinfo).toMatchObject({ code: "CAPABILITY_DENIED" });
    // Nothing outside the list was ever requested.
    expect(received.filter((r) => !r.path.startsWith("/api/"))).toEqual([]);

    // The secret appears nowhere the script or a reader of the run can see.
    expect(stdout).not.toContain(SECRET);
    expect(stderr).not.toContain(SECRET);
    const fetches = events.filter((e) => e.type === "capability" && e.kind === "fetch");
    expect(fetches.length).toBe(9);
    expect(fetches[0]).toMatchObject({ method: "GET", url: `${loopback.url}/api/ok`, status: 200, ok: true, script: "guard" });
    expect(fetches.find((e) => e.errorCode === "CAPABILITY_QUOTA")).toMatchObject({ url: `${loopback.url}/api/big` });
    expect(typeof fetches[0].durationMs).toBe("number");
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ result: { refunded: true } });
  });

  it("an uncaught denial is a hook error: onHookError applies and the run goes on", async () => {
    const { code, events } = await run(model("uncaught", [{ mode: "uncaught" }]));
    expect(code).toBe(0);
    const decision = events.find((e) => e.type === "hook-decision");
    expect(JSON.stringify(decision)).toContain("CAPABILITY_DENIED");
    // fail-open: the tool still ran.
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ result: { refunded: true } });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("stops a run at its fetch limit (--egress without a grant of more)", async () => {
    await loopback.clear();
    const { code, events } = await run(model("flood", [{ mode: "flood" }]));
    expect(code).toBe(0);
    const outcome = JSON.parse(events.find((e) => e.type === "log").message);
    expect(outcome.made).toBe(50);
    expect(outcome.refused).toMatch(/^CAPABILITY_QUOTA ctx.fetch: this run already made 50 such calls/);
    expect((await loopback.received()).length).toBe(50);
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("without --egress every fetch is denied, naming the URL", async () => {
    const file = model("none", [{ mode: "uncaught" }]);
    const result = await runCli(
      ["run", join(dir, "guard.ts"), "--prompt", "x", "--model", `scripted:${file}`, "--host-tools", join(dir, "tools.mjs"), "--json"],
      {},
    );
    const events = jsonLines(result.stdout);
    expect(events.find((e) => e.type === "capability")).toMatchObject({
      kind: "fetch",
      ok: false,
      errorCode: "CAPABILITY_DENIED",
      url: `${loopback.url}/outside/x`,
    });
  });

  it("a bad --egress is a usage error naming the flag", async () => {
    const result = await runCli([
      "run",
      join(dir, "guard.ts"),
      "--prompt",
      "x",
      "--model",
      `scripted:${model("bad", [{}])}`,
      "--egress",
      "ftp://x/",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("--egress[0]");
    expect(result.stderr).toContain("only http and https");
  });
});
