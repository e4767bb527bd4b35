import type { Context, Hono } from "hono";
import { z } from "zod";
import { randomUUID } from "node:crypto";
import { isHookboxError } from "../errors.js";
import { parseSince } from "../contracts/since.js";
import type { SandboxPool } from "../sandbox/api.js";
import type { DeploymentRecord, Store } from "../store/index.js";
import { DeploymentRefused, asSource, type Deployments } from "../policy/deployments.js";
import { DEFAULT_UPLOAD_LIMITS, createScriptVersion } from "../policy/upload.js";
import { shadowReport } from "../policy/shadow-report.js";
import { loadReplayScripts, replay, type ReplayChange } from "../policy/replay.js";
import type { ServedTenant } from "./config.js";
import { ApiError } from "./api-error.js";
import { readBody } from "./bodies.js";
import { TenantSlots } from "./tenant-slots.js";
import { tenantSandboxOptions } from "../host/tenant-runtime.js";

/* The policy lifecycle routes (docs/policy-lifecycle.md): versions, deployments, the shadow report, replays. */

export interface PolicyServices {
  store: Store;
  pool: SandboxPool;
  deployments: Deployments;
  /** The tenant's entry in the config in force (TENANT_REMOVED once a reload has taken it out). */
  served(tenant: string): ServedTenant;
}

const ScriptName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "a script name: letters, digits, _ . - (at most 64)");
const ScriptRefSchema = z.strictObject({ name: ScriptName, version: z.number().int().positive() });

export const UploadBody = z.strictObject({
  name: ScriptName,
  entry: z.string().min(1).max(DEFAULT_UPLOAD_LIMITS.maxPathChars),
  files: z.record(z.string(), z.string()),
});
export const DeployBody = z.strictObject({
  scripts: z.array(ScriptRefSchema).max(32),
  shadow: z.array(ScriptRefSchema).max(32).optional(),
});
export const ReplayBody = z.strictObject({
  scripts: z.array(ScriptRefSchema).min(1).max(32),
  since: z
    .string()
    .superRefine((value, ctx) => {
      const since = parseSince(value);
      if ("problem" in since) ctx.addIssue({ code: "custom", message: since.problem });
    })
    .optional(),
  sessionIds: z.array(z.string().min(1).max(200)).max(1000).optional(),
});

/** Replays answered over HTTP stop after this many calls (the summary counts what was replayed). */
const MAX_REPLAY_CALLS = 100_000;
const MAX_REPLAY_CHANGES_LISTED = 1000;
/** A replay whose hooks fail this many calls in a row stops: the version is broken, more calls tell nothing. */
const MAX_REPLAY_FAILURES_IN_A_ROW = 10;

type Env = { Variables: { tenant: string } };

function deploymentView(deployment: DeploymentRecord) {
  const { id, tenant: _tenant, ...rest } = deployment;
  return { deploymentId: id, ...rest };
}

/** The routes are always there (the OpenAPI document lists them); without services (no sandbox pool) they answer 501. */
export function registerPolicyRoutes(app: Hono<Env>, given: PolicyServices | undefined): void {
  const need = (): PolicyServices => {
    if (!given) throw new ApiError(501, "NOT_AVAILABLE", "this server has no sandbox pool of its own: no policy lifecycle routes");
    return given;
  };
  const served = (c: Context<Env>) => need().served(c.get("tenant"));
  // Each replay and upload holds a sandbox (and an upload a type check): a tenant has a few at a time.
  const replays = new TenantSlots("TOO_MANY_REPLAYS", "replays in progress", "wait for one to finish");
  const uploads = new TenantSlots("TOO_MANY_UPLOADS", "uploads being checked", "wait for one to finish");
  /** Where a tenant's throwaway sandboxes go: owned by the tenant (its standing), with its isolation and cordon. */
  const placement = (c: Context<Env>) => tenantSandboxOptions(served(c).config);

  app.post("/v1/scripts", async (c) => {
    const { store, pool } = need();
    const upload = await readBody(c, UploadBody);
    const files = Object.entries(upload.files);
    const limits = DEFAULT_UPLOAD_LIMITS;
    if (files.length === 0) throw new ApiError(400, "VALIDATION", "$.files: upload at least the entry file", "$.files");
    if (files.length > limits.maxFiles)
      throw new ApiError(413, "UPLOAD_TOO_LARGE", `$.files: ${files.length} files; at most ${limits.maxFiles} per version`, "$.files");
    const bytes = files.reduce((sum, [path, text]) => sum + Buffer.byteLength(path) + Buffer.byteLength(text), 0);
    if (bytes > limits.maxBytes)
      throw new ApiError(413, "UPLOAD_TOO_LARGE", `$.files: ${bytes} bytes; at most ${limits.maxBytes} per version`, "$.files");
    const release = uploads.take(c.get("tenant"), served(c).maxUploadsInFlight);
    try {
      const version = await createScriptVersion({
        store,
        pool: pool,
        tenant: c.get("tenant"),
        limits: served(c).config.limits ?? {},
        upload,
        maxTenantBytes: served(c).maxStoreBytes,
        placement: placement(c),
      });
      return c.json({ name: version.name, version: version.version, bundleHash: version.bundleHash, warnings: version.warnings }, 201);
    } catch (error) {
      if (!isHookboxError(error) || error.code !== "SCRIPT_INVALID") throw error;
      return c.json({ error: { code: "SCRIPT_INVALID", message: error.message, diagnostics: error.details.diagnostics } }, 400);
    } finally {
      release();
    }
  });

  app.get("/v1/scripts", async (c) => c.json({ scripts: await need().store.listScripts(c.get("tenant")) }));

  app.get("/v1/scripts/:name", async (c) => {
    const { store } = need();
    const name = c.req.param("name");
    const versions = await store.listScriptVersions(c.get("tenant"), name);
    if (versions.length === 0) throw new ApiError(404, "NOT_FOUND", `no script ${name}`);
    return c.json({
      name,
      versions: versions.map(({ version, entry, files, bundleHash, warnings, createdMs }) => ({
        version,
        entry,
        files: Object.keys(files),
        bundleHash,
        warnings,
        createdMs,
      })),
    });
  });

  app.get("/v1/scripts/:name/versions/:version", async (c) => {
    const { store } = need();
    const { name, version } = c.req.param();
    const found = /^\d{1,9}$/.test(version) ? await store.getScriptVersion(c.get("tenant"), name, Number(version)) : undefined;
    if (!found) throw new ApiError(404, "NOT_FOUND", `no version ${version} of script ${name}`);
    const { tenant: _tenant, ...visible } = found;
    return c.json(visible);
  });

  app.put("/v1/deployment", async (c) => {
    const { deployments } = need();
    const body = await readBody(c, DeployBody);
    try {
      const deployment = await deployments.deploy(c.get("tenant"), body);
      return c.json({ deploymentId: deployment.id, number: deployment.number });
    } catch (error) {
      if (error instanceof DeploymentRefused) throw new ApiError(400, "DEPLOYMENT_INVALID", `${error.path}: ${error.message}`, error.path);
      throw error;
    }
  });

  app.get("/v1/deployment", async (c) => c.json(deploymentView(await need().deployments.current(c.get("tenant")))));

  app.get("/v1/deployments", async (c) => c.json({ deployments: (await need().deployments.history(c.get("tenant"))).map(deploymentView) }));

  app.post("/v1/deployment/rollback", async (c) => {
    const { deployments } = need();
    const deployment = await deployments.rollback(c.get("tenant"));
    if (!deployment)
      throw new ApiError(409, "NO_PREVIOUS_DEPLOYMENT", "the current deployment is the first one: there is nothing to roll back to");
    return c.json({ deploymentId: deployment.id, number: deployment.number, rollbackOf: deployment.rollbackOf });
  });

  app.get("/v1/deployments/:id/shadow-report", async (c) => {
    const { store } = need();
    const id = c.req.param("id");
    if (!(await store.getDeployment(c.get("tenant"), id))) throw new ApiError(404, "NOT_FOUND", `no deployment ${id}`);
    return c.json(await shadowReport(store, c.get("tenant"), id));
  });

  app.post("/v1/replays", async (c) => {
    const { store, pool } = need();
    // Read now: the signal aborts when the client goes away only if it exists by then.
    const clientGone = c.req.raw.signal;
    const body = await readBody(c, ReplayBody);
    const tenant = c.get("tenant");
    const versions = [];
    for (const [index, ref] of body.scripts.entries()) {
      const version = await store.getScriptVersion(tenant, ref.name, ref.version);
      if (!version)
        throw new ApiError(
          400,
          "VALIDATION",
          `$.scripts[${index}]: no version ${ref.version} of script ${ref.name}`,
          `$.scripts[${index}]`,
        );
      versions.push(version);
    }
    const release = replays.take(tenant, served(c).maxReplaysInFlight);
    const sandboxName = `${tenant}~replay~${randomUUID()}`;
    try {
      const scripts = await loadReplayScripts(pool, sandboxName, versions.map(asSource), {
        limits: served(c).config.limits ?? {},
        versions: versions.map((v) => v.version),
        sandbox: placement(c),
      });
      const changes: ReplayChange[] = [];
      const summary = await replay({
        store,
        filter: {
          tenant,
          ...(body.since ? { sinceMs: (parseSince(body.since) as { ms: number }).ms } : {}),
          ...(body.sessionIds ? { sessionIds: body.sessionIds } : {}),
        },
        scripts,
        maxCalls: MAX_REPLAY_CALLS,
        maxCpuMs: served(c).replayCpuMs,
        maxConsecutiveFailures: MAX_REPLAY_FAILURES_IN_A_ROW,
        signal: clientGone,
        onChange: (change) => {
          if (changes.length < MAX_REPLAY_CHANGES_LISTED) changes.push(change);
        },
      });
      return c.json({ changes, summary });
    } catch (error) {
      if (isHookboxError(error) && error.code === "SCRIPT_LOAD") throw new ApiError(400, "SCRIPT_LOAD", error.message);
      throw error;
    } finally {
      pool.drop?.(sandboxName);
      release();
    }
  });
}
