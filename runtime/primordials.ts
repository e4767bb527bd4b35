/*
 * Built-ins captured when the runtime is evaluated: before any script code runs in the context.
 * Runtime code uses only these, so a script that replaces JSON.stringify, Array.prototype methods,
 * Promise.prototype.then or Symbol.iterator cannot reach the code that talks to the host.
 * Rules for runtime code: no spread over arrays, no for-of, no array destructuring, no async/await
 * (they read user-replaceable iterators or `then`); call methods through `uncurry`.
 */
export const ReflectApply = Reflect.apply;
export const ReflectGet = Reflect.get;
export const ReflectSet = Reflect.set;
export const ReflectHas = Reflect.has;
export const ReflectDeleteProperty = Reflect.deleteProperty;
export const ReflectOwnKeys = Reflect.ownKeys;
export const ReflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
export const ReflectDefineProperty = Reflect.defineProperty;
export const ReflectGetPrototypeOf = Reflect.getPrototypeOf;
export const ReflectSetPrototypeOf = Reflect.setPrototypeOf;
export const ReflectIsExtensible = Reflect.isExtensible;
export const ReflectPreventExtensions = Reflect.preventExtensions;
export const ReflectConstruct = Reflect.construct;
export const ProxyCtor = Proxy;
const uncurry =
  <T, A extends unknown[], R>(method: (this: T, ...args: A) => R) =>
  (self: T, ...args: A): R =>
    ReflectApply(method, self, args);

export const ObjectCreate = Object.create;
export const ObjectKeys = Object.keys;
export const ObjectFreeze = Object.freeze;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectHasOwn = Object.hasOwn;
export const ObjectPrototype = Object.prototype;
export const ArrayIsArray = Array.isArray;
export const ArrayPrototypeJoin = uncurry(Array.prototype.join as (this: unknown[], separator?: string) => string);
export const JSONStringify = JSON.stringify;
export const JSONParse = JSON.parse;
export const StringCtor = String;
export const StringPrototypeSlice = uncurry(String.prototype.slice);
export const StringPrototypeIncludes = uncurry(String.prototype.includes);
export const NumberIsFinite = Number.isFinite;
export const NumberIsInteger = Number.isInteger;
export const ErrorCtor = Error;
export const RangeErrorCtor = RangeError;
export const TypeErrorCtor = TypeError;
export const PromiseCtor = Promise;
const promiseResolve = Promise.resolve;
export const PromiseResolve = (value: unknown): Promise<unknown> => ReflectApply(promiseResolve, PromiseCtor, [value]);
const promiseReject = Promise.reject;
export const PromiseReject = (reason: unknown): Promise<never> => ReflectApply(promiseReject, PromiseCtor, [reason]);
export const PromisePrototypeThen = uncurry(
  Promise.prototype.then as (
    this: Promise<unknown>,
    ok: (value: unknown) => unknown,
    fail: (error: unknown) => unknown,
  ) => Promise<unknown>,
);
export const WeakMapCtor = WeakMap;
export const WeakMapPrototypeGet = uncurry(WeakMap.prototype.get as (this: WeakMap<object, unknown>, key: object) => unknown);
export const WeakMapPrototypeSet = uncurry(
  WeakMap.prototype.set as (this: WeakMap<object, unknown>, key: object, value: unknown) => WeakMap<object, unknown>,
);
export const globalObject = globalThis;

/** A dictionary without a prototype: lookups never reach Object.prototype, which scripts can change. */
export function dict<V>(): Record<string, V> {
  return ObjectCreate(null) as Record<string, V>;
}
export const RegExpPrototypeExec = uncurry(RegExp.prototype.exec);

/**
 * Stores `value` as a plain data property (an array element or an object key) without running setters a
 * script may have put on Array.prototype or Object.prototype (plain assignment would; so would a
 * descriptor inheriting a polluted `get`).
 */
export function defineData(target: object, key: string | number, value: unknown): void {
  defineOwn(target, key, value, true);
}

/** As defineData, but not enumerable: JSON.stringify, spreading and Object.keys skip it (ctx capabilities). */
export function defineHidden(target: object, key: string, value: unknown): void {
  defineOwn(target, key, value, false);
}

function defineOwn(target: object, key: string | number, value: unknown, enumerable: boolean): void {
  const descriptor = ObjectCreate(null) as PropertyDescriptor;
  descriptor.value = value;
  descriptor.writable = true;
  descriptor.enumerable = enumerable;
  descriptor.configurable = true;
  ObjectDefineProperty(target, key, descriptor);
}
