import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";

/*
 * A served tenant on disk: a scripted model, a trusted host-tools module whose tools and hooks append a
 * line to a log file (so tests count executions across processes), optional sandboxed scripts, a config.
 */
export interface TenantFixture {
  name: string;
  key: string;
  steps: unknown[];
  scripts?: Record<string, string>;
  limits?: Record<string, number>;
  /** Use an {env} key instead of {sha256}. */
  envKey?: string;
  /** More fields of the tenant's config entry (pricing, fallbackModel, ...). */
  extra?: Record<string, unknown>;
}

export const twoToolSteps = [
  {
    toolCalls: [
      { id: "c1", name: "record", args: { id: "c1" } },
      { id: "c2", name: "record", args: { id: "c2" } },
    ],
  },
  { text: "both recorded" },
];

export function writeFixture(
  tenants: TenantFixture[],
  extra: Record<string, unknown> = {},
): { dir: string; config: string; store: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-server-"));
  const log = join(dir, "executions.log");
  writeFileSync(
    join(dir, "tools.mjs"),
    `import { appendFileSync, existsSync, readFileSync } from "node:fs";
const log = ${JSON.stringify(log)};
// Delays apply to the first execution only, so a resumed run does not wait again.
const record = (line) => {
  const seen = existsSync(log) ? readFileSync(log, "utf8").split("\\n").filter((l) => l === line).length : 0;
  appendFileSync(log, line + "\\n");
  return seen === 0;
};
const sleep = (ms, signal) => new Promise((resolve) => { const t = setTimeout(resolve, ms); signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }); });
export default [{
  name: "record",
  description: "Append the id to the execution log",
  parameters: { type: "object", properties: { id: { type: "string" }, delayMs: { type: "number" } }, required: ["id"] },
  async handler(args, ctx, { signal }) {
    // A host tool's error may name a host path (here the fixture's own folder, the config's): the server redacts it.
    if (args.failWithHostPath) throw new Error("cannot append to " + log);
    const first = record("tool " + ctx.sessionId + " " + args.id);
    if (args.delayMs && first) await sleep(args.delayMs, signal);
    return { recorded: args.id };
  },
}];
export const hooks = [{
  name: "count-hooks",
  async beforeToolCall(p) {
    const first = record("before " + p.sessionId + " " + p.call.id);
    if (p.call.args.hookDelayMs && first) await sleep(p.call.args.hookDelayMs);
  },
}];
`,
  );
  const config = {
    ...extra,
    tenants: tenants.map((tenant) => {
      writeFileSync(join(dir, `${tenant.name}-model.json`), JSON.stringify({ steps: tenant.steps }));
      const scripts = Object.entries(tenant.scripts ?? {}).map(([file, source]) => {
        writeFileSync(join(dir, file), source);
        return file;
      });
      return {
        name: tenant.name,
        apiKeys: [tenant.envKey ? { env: tenant.envKey } : { sha256: createHash("sha256").update(tenant.key).digest("hex") }],
        scripts,
        hostTools: "tools.mjs",
        model: `scripted:${tenant.name}-model.json`,
        ...(tenant.limits ? { limits: tenant.limits } : {}),
        ...tenant.extra,
      };
    }),
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2));
  return { dir, config: join(dir, "config.json"), store: join(dir, "store.db"), log };
}
