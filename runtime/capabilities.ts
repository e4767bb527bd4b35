/*
 * `ctx.fetch`, `ctx.kv` and `ctx.model` as scripts see them. They are plain runtime functions: each call
 * becomes one bounded JSON request that the worker forwards to the host, which checks the tenant's grants
 * and does the I/O (src/capabilities). Nothing here touches the network or the store; no host object is
 * ever handed to script code, and the answers are parsed here with the captured JSON.parse.
 */
import { guestError } from "./guest-errors.js";
import {
  JSONParse,
  ObjectCreate,
  ObjectDefineProperty,
  ObjectFreeze,
  PromiseReject,
  PromisePrototypeThen,
  StringPrototypeIncludes,
  WeakMapCtor,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
  defineData,
  defineHidden,
} from "./primordials.js";
import { isGuestDataError, toBoundedJson } from "./serialize.js";

/**
 * The largest request that leaves the isolate: a 1 MiB fetch body (the most a tenant may allow) plus room
 * for the rest. A bigger one is refused here, before it crosses to the host.
 */
const MAX_REQUEST_CHARS = 1024 * 1024 + 64 * 1024;

/** Sends one capability request (JSON text) for the current callback; settles with the host's answer. */
export type AskHost = (requestJson: string) => Promise<unknown>;

/** Serializes a request inside the caller's segment; a value that is not bounded JSON rejects at once. */
function ask(askHost: AskHost, what: string, request: Record<string, unknown>, maxBytes: number): Promise<unknown> {
  let text: string;
  try {
    text = toBoundedJson(request, maxBytes < MAX_REQUEST_CHARS ? maxBytes : MAX_REQUEST_CHARS);
  } catch (thrown) {
    if (isGuestDataError(thrown) && StringPrototypeIncludes(thrown.problem, "-byte limit"))
      return PromiseReject(guestError(what + ": the request exceeds " + MAX_REQUEST_CHARS + " characters", "CAPABILITY_QUOTA"));
    const problem = isGuestDataError(thrown) ? thrown.path + " " + thrown.problem : "could not be serialized";
    return PromiseReject(guestError(what + ": the request " + problem, "CAPABILITY_INVALID"));
  }
  return askHost(text);
}

function record(): Record<string, unknown> {
  return ObjectCreate(null) as Record<string, unknown>;
}

/** `{status, headers, body}` plus `json()`, built from the host's answer. */
function fetchResponse(answer: unknown): unknown {
  const source = answer as { status: number; headers: Record<string, string>; body: string };
  const response = {};
  defineData(response, "status", source.status);
  defineData(response, "ok", source.status >= 200 && source.status < 300);
  defineData(response, "headers", source.headers);
  defineData(response, "body", source.body);
  defineHidden(response, "json", function json(): unknown {
    return JSONParse(source.body);
  });
  return response;
}

/** The capability objects of one callback, each made the first time a script reads it. */
function makeFetch(askHost: AskHost, maxBytes: number): unknown {
  return function fetch(url: unknown, init?: unknown): Promise<unknown> {
    const request = record();
    request.kind = "fetch";
    request.url = url;
    if (init !== undefined && init !== null) {
      const options = init as { method?: unknown; headers?: unknown; body?: unknown };
      request.method = options.method;
      request.headers = options.headers;
      request.body = options.body;
    }
    return PromisePrototypeThen(ask(askHost, "ctx.fetch", request, maxBytes), fetchResponse, (error) => PromiseReject(error));
  };
}

function makeKv(askHost: AskHost, maxBytes: number): unknown {
  const kvRequest = (op: string, fields: Record<string, unknown>): Promise<unknown> => {
    fields.kind = "kv";
    fields.op = op;
    return ask(askHost, "ctx.kv." + op, fields, maxBytes);
  };
  return ObjectFreeze({
    get(key: unknown): Promise<unknown> {
      const fields = record();
      fields.key = key;
      return kvRequest("get", fields);
    },
    set(key: unknown, value: unknown, options?: unknown): Promise<unknown> {
      const fields = record();
      fields.key = key;
      fields.value = value;
      if (options !== undefined && options !== null) fields.ttlMs = (options as { ttlMs?: unknown }).ttlMs;
      return kvRequest("set", fields);
    },
    incr(key: unknown, by?: unknown, options?: unknown): Promise<unknown> {
      const fields = record();
      fields.key = key;
      fields.by = by;
      if (options !== undefined && options !== null) fields.ttlMs = (options as { ttlMs?: unknown }).ttlMs;
      return kvRequest("incr", fields);
    },
    compareAndSet(key: unknown, expected: unknown, value: unknown, options?: unknown): Promise<unknown> {
      const fields = record();
      fields.key = key;
      fields.expected = expected;
      fields.value = value;
      if (options !== undefined && options !== null) fields.ttlMs = (options as { ttlMs?: unknown }).ttlMs;
      return kvRequest("compareAndSet", fields);
    },
    delete(key: unknown): Promise<unknown> {
      const fields = record();
      fields.key = key;
      return kvRequest("delete", fields);
    },
    list(prefix?: unknown, options?: unknown): Promise<unknown> {
      const fields = record();
      fields.prefix = prefix;
      if (options !== undefined && options !== null) fields.cursor = (options as { cursor?: unknown }).cursor;
      return kvRequest("list", fields);
    },
  });
}

function makeModel(askHost: AskHost, maxBytes: number): unknown {
  return ObjectFreeze({
    generate(options: unknown): Promise<unknown> {
      const fields = record();
      fields.kind = "model";
      if (options !== undefined && options !== null) {
        const given = options as { prompt?: unknown; messages?: unknown; maxTokens?: unknown };
        fields.prompt = given.prompt;
        fields.messages = given.messages;
        fields.maxTokens = given.maxTokens;
      }
      return ask(askHost, "ctx.model.generate", fields, maxBytes);
    },
  });
}

type CapabilityName = "fetch" | "kv" | "model";

/** Whose ctx it is (the callback's id), and its capability objects once made. */
interface OwnCapabilities {
  callId: number;
  fetch: unknown;
  kv: unknown;
  model: unknown;
}

/** Gives `target` (a callback's ctx, or a hook's payload) the capabilities of callback `callId`. */
export type AttachCapabilities = (target: object, callId: number) => void;

/**
 * One per context. `fetch`, `kv` and `model` are non-enumerable accessor properties of each ctx, so spreading or
 * serializing a ctx never carries them; a getter makes that callback's object the first time a script reads it
 * (then always answers the same one), and a setter turns the property into a plain data property holding what
 * was assigned, as assigning a writable one does. Most callbacks never use a capability: making all three
 * objects (nine functions, two frozen objects) for every callback was ~5% of a sandbox worker's CPU in the loop
 * bench (BENCHMARKS.md). The getters and setters are the context's, shared by its callbacks; which callback
 * a ctx belongs to is kept in a WeakMap that only the runtime can reach, so reading a getter with another
 * `this` answers only that object's own capabilities (undefined for anything that is not a ctx).
 */
export function capabilityAttacher(askFor: (callId: number) => AskHost, maxBytes: number): AttachCapabilities {
  const owners = new WeakMapCtor<object, OwnCapabilities>();
  const accessor = (name: CapabilityName, make: (askHost: AskHost, maxBytes: number) => unknown): PropertyDescriptor => {
    const descriptor = ObjectCreate(null) as PropertyDescriptor;
    descriptor.enumerable = false;
    descriptor.configurable = true;
    descriptor.get = function (this: unknown): unknown {
      const own = WeakMapPrototypeGet(owners, this as object) as OwnCapabilities | undefined;
      if (own === undefined) return undefined;
      let value = own[name];
      if (value === undefined) value = own[name] = make(askFor(own.callId), maxBytes);
      return value;
    };
    descriptor.set = function (this: unknown, value: unknown): void {
      if ((typeof this === "object" && this !== null) || typeof this === "function") defineHidden(this as object, name, value);
    };
    return descriptor;
  };
  const fetch = accessor("fetch", makeFetch);
  const kv = accessor("kv", makeKv);
  const model = accessor("model", makeModel);
  return function attach(target: object, callId: number): void {
    WeakMapPrototypeSet(owners, target, { callId, fetch: undefined, kv: undefined, model: undefined });
    ObjectDefineProperty(target, "fetch", fetch);
    ObjectDefineProperty(target, "kv", kv);
    ObjectDefineProperty(target, "model", model);
  };
}
