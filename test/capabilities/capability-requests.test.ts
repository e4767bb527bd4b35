import { describe, expect, it } from "vitest";
import { parseCapabilityRequest } from "../../src/capabilities/requests.js";

/*
 * The shape of a script's capability request, checked on the host before anything is done (docs/capabilities.md):
 * a malformed one is CAPABILITY_INVALID naming the capability, the operation and the field; an oversized one is
 * CAPABILITY_QUOTA. In the test's own process, through the module's parser.
 */

const YEAR_MS = 366 * 24 * 3600 * 1000;
const headers = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`x-h${index}`, "v"]));
const messages = (count: number) => Array.from({ length: count }, () => ({ role: "user", content: "c" }));

function refusal(request: unknown, maxChars = 10_000_000) {
  try {
    parseCapabilityRequest(typeof request === "string" ? request : JSON.stringify(request), maxChars);
  } catch (error) {
    const { code, message, details } = error as { code: string; message: string; details: Record<string, unknown> };
    return { code, message, details };
  }
  throw new Error(`accepted: ${JSON.stringify(request).slice(0, 200)}`);
}

describe("a capability request's shape", () => {
  it.each([
    // Which capability: the request's kind, else "ctx".
    [null, "ctx: $: Invalid input: expected object, received null"],
    [[], "ctx: $: Invalid input: expected object, received array"],
    [{}, "ctx: $.kind: Invalid discriminator value. Expected 'fetch' | 'kv' | 'model'"],
    [{ kind: "files" }, "ctx: $.kind: Invalid discriminator value. Expected 'fetch' | 'kv' | 'model'"],
    [{ kind: "kv" }, "ctx.kv: $.op: Invalid discriminator value. Expected 'get' | 'set' | 'incr' | 'compareAndSet' | 'delete' | 'list'"],
    [
      { kind: "kv", op: 7 },
      "ctx.kv: $.op: Invalid discriminator value. Expected 'get' | 'set' | 'incr' | 'compareAndSet' | 'delete' | 'list'",
    ],
    // ctx.fetch
    [{ kind: "fetch" }, "ctx.fetch: $.url: Invalid input: expected string, received undefined"],
    [{ kind: "fetch", url: "" }, "ctx.fetch: $.url: Too small: expected string to have >=1 characters"],
    [{ kind: "fetch", url: "u".repeat(8193) }, "ctx.fetch: $.url: Too big: expected string to have <=8192 characters"],
    [{ kind: "fetch", url: "u", method: "TRACE" }, expect.stringMatching(/^ctx\.fetch: \$\.method: Invalid option: expected one of "GET"/)],
    [{ kind: "fetch", url: "u", headers: headers(65) }, "ctx.fetch: $.headers: at most 64 headers"],
    [{ kind: "fetch", url: "u", headers: { "": "v" } }, 'ctx.fetch: $.headers[""]: Invalid key in record'],
    [{ kind: "fetch", url: "u", headers: { ["h".repeat(257)]: "v" } }, `ctx.fetch: $.headers.${"h".repeat(257)}: Invalid key in record`],
    [
      { kind: "fetch", url: "u", headers: { a: "v".repeat(8193) } },
      "ctx.fetch: $.headers.a: Too big: expected string to have <=8192 characters",
    ],
    [{ kind: "fetch", url: "u", body: { json: true } }, "ctx.fetch: $.body: Invalid input: expected string, received object"],
    [{ kind: "fetch", url: "u", redirect: "follow" }, 'ctx.fetch: $: Unrecognized key: "redirect"'],
    // ctx.kv, each operation named
    [{ kind: "kv", op: "get", key: "" }, "ctx.kv.get: $.key: Too small: expected string to have >=1 characters"],
    [{ kind: "kv", op: "get", key: "k".repeat(257) }, "ctx.kv.get: $.key: Too big: expected string to have <=256 characters"],
    [{ kind: "kv", op: "get" }, "ctx.kv.get: $.key: Invalid input: expected string, received undefined"],
    [{ kind: "kv", op: "set", key: "a" }, "ctx.kv.set: $.value: a value is required (JSON; use delete to remove a key)"],
    [{ kind: "kv", op: "set", key: "a", value: 1, ttlMs: 0 }, "ctx.kv.set: $.ttlMs: Too small: expected number to be >0"],
    [{ kind: "kv", op: "set", key: "a", value: 1, ttlMs: 1.5 }, "ctx.kv.set: $.ttlMs: Invalid input: expected int, received number"],
    [{ kind: "kv", op: "set", key: "a", value: 1, ttlMs: YEAR_MS + 1 }, `ctx.kv.set: $.ttlMs: Too big: expected number to be <=${YEAR_MS}`],
    [{ kind: "kv", op: "incr", key: "a", by: "1" }, "ctx.kv.incr: $.by: Invalid input: expected number, received string"],
    [{ kind: "kv", op: "incr", key: "a", ttlMs: -5 }, "ctx.kv.incr: $.ttlMs: Too small: expected number to be >0"],
    [{ kind: "kv", op: "incr", key: "k".repeat(257) }, "ctx.kv.incr: $.key: Too big: expected string to have <=256 characters"],
    [
      { kind: "kv", op: "compareAndSet", key: "a", value: 1 },
      "ctx.kv.compareAndSet: $.expected: an expected value is required (JSON; null for a missing key)",
    ],
    [
      { kind: "kv", op: "compareAndSet", key: "a", expected: 1 },
      "ctx.kv.compareAndSet: $.value: a value is required (JSON; use delete to remove a key)",
    ],
    [
      { kind: "kv", op: "compareAndSet", key: "a", expected: 1, value: 2, ttlMs: 0.5 },
      "ctx.kv.compareAndSet: $.ttlMs: Invalid input: expected int, received number",
    ],
    [
      { kind: "kv", op: "compareAndSet", key: "", expected: 1, value: 2 },
      "ctx.kv.compareAndSet: $.key: Too small: expected string to have >=1 characters",
    ],
    [{ kind: "kv", op: "delete", key: "a", value: 1 }, 'ctx.kv.delete: $: Unrecognized key: "value"'],
    [{ kind: "kv", op: "delete", key: "k".repeat(257) }, "ctx.kv.delete: $.key: Too big: expected string to have <=256 characters"],
    [{ kind: "kv", op: "list", prefix: "p".repeat(257) }, "ctx.kv.list: $.prefix: Too big: expected string to have <=256 characters"],
    [{ kind: "kv", op: "list", cursor: "" }, "ctx.kv.list: $.cursor: Too small: expected string to have >=1 characters"],
    [{ kind: "kv", op: "list", cursor: "c".repeat(257) }, "ctx.kv.list: $.cursor: Too big: expected string to have <=256 characters"],
    [{ kind: "kv", op: "list", key: "a" }, 'ctx.kv.list: $: Unrecognized key: "key"'],
    [{ kind: "kv", op: "get", key: "a", ttlMs: 5 }, 'ctx.kv.get: $: Unrecognized key: "ttlMs"'],
    // ctx.model.generate
    [
      { kind: "model", prompt: "p".repeat(256 * 1024 + 1) },
      "ctx.model.generate: $.prompt: Too big: expected string to have <=262144 characters",
    ],
    [{ kind: "model", messages: messages(101) }, "ctx.model.generate: $.messages: Too big: expected array to have <=100 items"],
    [
      { kind: "model", messages: [{ role: "tool", content: "c" }] },
      'ctx.model.generate: $.messages[0].role: Invalid option: expected one of "system"|"user"|"assistant"',
    ],
    [
      {
        kind: "model",
        messages: [
          { role: "user", content: "c" },
          { role: "user", content: "c".repeat(256 * 1024 + 1) },
        ],
      },
      "ctx.model.generate: $.messages[1].content: Too big: expected string to have <=262144 characters",
    ],
    [
      { kind: "model", messages: [{ role: "user", content: "c", name: "n" }] },
      'ctx.model.generate: $.messages[0]: Unrecognized key: "name"',
    ],
    [{ kind: "model", maxTokens: 0 }, "ctx.model.generate: $.maxTokens: Too small: expected number to be >0"],
    [{ kind: "model", maxTokens: 2.5 }, "ctx.model.generate: $.maxTokens: Invalid input: expected int, received number"],
  ])("refuses %j", (request, message) => {
    const refused = refusal(request);
    expect(refused.code).toBe("CAPABILITY_INVALID");
    expect(refused.message).toEqual(message);
    // The field is named in the details too, as the message's path.
    expect(refused.message).toContain(`: ${refused.details.path as string}`);
  });

  it.each([
    { kind: "fetch", url: "u".repeat(8192), method: "patch", headers: headers(64), body: "" },
    { kind: "fetch", url: "https://example.com/", method: "OPTIONS", headers: { ["h".repeat(256)]: "v".repeat(8192) } },
    { kind: "kv", op: "get", key: "k".repeat(256) },
    { kind: "kv", op: "set", key: "k", value: null, ttlMs: YEAR_MS },
    { kind: "kv", op: "set", key: "k", value: { nested: [1, "two", { three: false }] }, ttlMs: 1 },
    { kind: "kv", op: "incr", key: "k", by: -0.5 },
    { kind: "kv", op: "compareAndSet", key: "k", expected: null, value: 0 },
    { kind: "kv", op: "delete", key: "k" },
    { kind: "kv", op: "list" },
    { kind: "kv", op: "list", prefix: "", cursor: "c".repeat(256) },
    { kind: "kv", op: "list", prefix: "p".repeat(256) },
    { kind: "model" },
    { kind: "model", prompt: "p".repeat(256 * 1024), messages: messages(100), maxTokens: 1 },
    {
      kind: "model",
      messages: [
        { role: "system", content: "s" },
        { role: "assistant", content: "" },
      ],
    },
  ])("accepts %j as it is", (request) => {
    expect(parseCapabilityRequest(JSON.stringify(request), 10_000_000)).toEqual(request);
  });

  it.each(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])("accepts the method %s in either case", (method) => {
    for (const spelled of [method, method.toLowerCase()])
      expect(parseCapabilityRequest(JSON.stringify({ kind: "fetch", url: "u", method: spelled }), 1000)).toEqual({
        kind: "fetch",
        url: "u",
        method: spelled,
      });
  });

  it("a request longer than the limit is CAPABILITY_QUOTA naming both lengths; one at the limit is read", () => {
    const text = JSON.stringify({ kind: "kv", op: "get", key: "abc" });
    expect(parseCapabilityRequest(text, text.length)).toEqual({ kind: "kv", op: "get", key: "abc" });
    expect(refusal(text, text.length - 1)).toEqual({
      code: "CAPABILITY_QUOTA",
      message: `a capability request of ${text.length} characters exceeds the ${text.length - 1}-character limit`,
      details: {},
    });
  });

  it("text that is not JSON is CAPABILITY_INVALID", () => {
    expect(refusal("{kind: kv}")).toEqual({ code: "CAPABILITY_INVALID", message: "a capability request was not JSON", details: {} });
    expect(refusal("")).toMatchObject({ code: "CAPABILITY_INVALID", message: "a capability request was not JSON" });
  });

  it("a kv request names the operation the script asked for, whatever it is", () => {
    expect(refusal({ kind: "kv", op: "drop", key: "a" }).message).toMatch(/^ctx\.kv\.drop: \$\.op: /);
    expect(refusal({ kind: "model", op: "x" }).message).toBe('ctx.model.generate: $: Unrecognized key: "op"');
    expect(refusal({ kind: "fetch", op: "get", url: "u" }).message).toBe('ctx.fetch: $: Unrecognized key: "op"');
  });
});
