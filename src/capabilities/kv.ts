import { HookboxError } from "../errors.js";
import type { KvStore } from "../store/kv.js";
import type { Json } from "../turns/json.js";
import { KV_LIST_PAGE, KV_MAX_VALUE_BYTES } from "./grants.js";
import type { KvCapabilityRequest } from "./requests.js";

/** ctx.kv on the host: one validated request against the tenant's entries. get answers null for a missing key. */
export async function serveKv(
  kv: KvStore,
  tenant: string,
  request: KvCapabilityRequest,
  options: { quotaBytes: number; now: () => number },
): Promise<Json> {
  const nowMs = options.now();
  switch (request.op) {
    case "get": {
      const text = await kv.get(tenant, request.key, nowMs);
      return text === undefined ? null : (JSON.parse(text) as Json);
    }
    case "set": {
      const text = JSON.stringify(request.value);
      const bytes = Buffer.byteLength(text);
      if (bytes > KV_MAX_VALUE_BYTES)
        throw new HookboxError(
          "CAPABILITY_QUOTA",
          `ctx.kv.set: the value of "${request.key}" is ${bytes} bytes of JSON, over the ${KV_MAX_VALUE_BYTES}-byte limit`,
          {
            key: request.key,
          },
        );
      await kv.set(tenant, request.key, text, {
        quotaBytes: options.quotaBytes,
        nowMs,
        ...(request.ttlMs !== undefined ? { expiresMs: nowMs + request.ttlMs } : {}),
      });
      return null;
    }
    case "delete":
      return kv.delete(tenant, request.key, nowMs);
    case "list": {
      const page = await kv.list(tenant, {
        prefix: request.prefix ?? "",
        limit: KV_LIST_PAGE,
        nowMs,
        ...(request.cursor !== undefined ? { after: request.cursor } : {}),
      });
      return page.cursor === undefined ? { keys: page.keys } : { keys: page.keys, cursor: page.cursor };
    }
  }
}
