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
  const writeOptions = (ttlMs: number | undefined) => ({
    quotaBytes: options.quotaBytes,
    nowMs,
    ...(ttlMs !== undefined ? { expiresMs: nowMs + ttlMs } : {}),
  });
  switch (request.op) {
    case "get": {
      const text = await kv.get(tenant, request.key, nowMs);
      return text === undefined ? null : (JSON.parse(text) as Json);
    }
    case "set": {
      await kv.set(tenant, request.key, valueText("set", request.key, request.value), writeOptions(request.ttlMs));
      return null;
    }
    case "incr":
      return kv.incr(tenant, request.key, request.by ?? 1, writeOptions(request.ttlMs));
    case "compareAndSet": {
      const value = valueText("compareAndSet", request.key, request.value);
      const expected = request.expected === null ? null : JSON.stringify(request.expected);
      return kv.compareAndSet(tenant, request.key, expected, value, writeOptions(request.ttlMs));
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

/** A value's JSON text, or CAPABILITY_QUOTA when it is over the per-value limit. */
function valueText(op: string, key: string, value: unknown): string {
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text);
  if (bytes > KV_MAX_VALUE_BYTES)
    throw new HookboxError(
      "CAPABILITY_QUOTA",
      `ctx.kv.${op}: the value of "${key}" is ${bytes} bytes of JSON, over the ${KV_MAX_VALUE_BYTES}-byte limit`,
      {
        key,
      },
    );
  return text;
}
