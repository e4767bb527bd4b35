/*
 * A big JSON value handed to a script without parsing it first. Hooks often pass a tool result through
 * untouched (`return { result: p.result }`) or only look at the call: parsing 100 KB in the isolate and
 * serializing it again would be most of the cost of such a call (and of the script's CPU budget).
 *
 * The script gets a proxy whose target is an empty object or array of the value's kind. The first
 * operation of any kind on it parses the text and copies the top-level properties onto the target; from
 * then on every trap forwards to the target, so the proxy behaves as the parsed value itself (the target
 * *is* the value, which also keeps every proxy invariant). Nested values are plain objects.
 *
 * Until then, the value is known to be exactly its text: where the script returns it untouched, the
 * serializer (serialize.ts) leaves it out and names where it was, and the host puts the text it sent back
 * in: no parsing, walking or copying it out of the isolate.
 */
import {
  ArrayIsArray,
  JSONParse,
  ObjectCreate,
  ObjectKeys,
  ProxyCtor,
  ReflectDefineProperty,
  ReflectDeleteProperty,
  ReflectGet,
  ReflectGetOwnPropertyDescriptor,
  ReflectGetPrototypeOf,
  ReflectHas,
  ReflectIsExtensible,
  ReflectOwnKeys,
  ReflectPreventExtensions,
  ReflectSet,
  ReflectSetPrototypeOf,
  StringPrototypeIncludes,
  defineData,
} from "./primordials.js";

export interface LazyJson {
  /** What the script sees. */
  readonly value: object;
  /** True while nothing has looked inside the value: it is still exactly the text it came as. */
  untouched(): boolean;
}

/** `text` must be the JSON of an object or an array (made by the host's JSON.stringify). */
export function lazyJson(text: string): LazyJson {
  const target: object = text[0] === "[" ? [] : {};
  let pending: string | undefined = text;
  // JSON.stringify asks every object for `toJSON` before serializing it: answering that from the target
  // (which inherits whatever Object.prototype has) keeps the value untouched, unless the text has its own.
  const ownToJSON = StringPrototypeIncludes(text, '"toJSON"');

  function materialize(): void {
    if (pending === undefined) return;
    const parsed = JSONParse(pending) as Record<string, unknown>;
    pending = undefined;
    // Defined, not assigned: setters a script put on a prototype never run here.
    if (ArrayIsArray(parsed)) {
      for (let i = 0; i < parsed.length; i++) defineData(target, i, parsed[i]);
    } else {
      const keys = ObjectKeys(parsed);
      for (let i = 0; i < keys.length; i++) defineData(target, keys[i]!, parsed[keys[i]!]);
    }
  }

  // Prototype-less: a trap a script adds to Object.prototype is never consulted.
  const handler = ObjectCreate(null) as ProxyHandler<object>;
  handler.get = (inner, key, receiver) => {
    if (!(key === "toJSON" && pending !== undefined && !ownToJSON)) materialize();
    return ReflectGet(inner, key, receiver === proxy ? inner : receiver);
  };
  handler.set = (inner, key, value, receiver) => {
    materialize();
    return ReflectSet(inner, key, value, receiver === proxy ? inner : receiver);
  };
  handler.has = (inner, key) => (materialize(), ReflectHas(inner, key));
  handler.deleteProperty = (inner, key) => (materialize(), ReflectDeleteProperty(inner, key));
  handler.ownKeys = (inner) => (materialize(), ReflectOwnKeys(inner));
  handler.getOwnPropertyDescriptor = (inner, key) => (materialize(), ReflectGetOwnPropertyDescriptor(inner, key));
  handler.defineProperty = (inner, key, descriptor) => (materialize(), ReflectDefineProperty(inner, key, descriptor));
  handler.getPrototypeOf = (inner) => (materialize(), ReflectGetPrototypeOf(inner));
  handler.setPrototypeOf = (inner, prototype) => (materialize(), ReflectSetPrototypeOf(inner, prototype));
  handler.isExtensible = (inner) => (materialize(), ReflectIsExtensible(inner));
  handler.preventExtensions = (inner) => (materialize(), ReflectPreventExtensions(inner));
  const proxy = new ProxyCtor(target, handler);

  return { value: proxy, untouched: () => pending !== undefined };
}
