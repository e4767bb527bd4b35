import { ObjectDefineProperty, RangeErrorCtor, ReflectConstruct, TypeErrorCtor, globalObject } from "./primordials.js";

/*
 * isolated-vm counts every array buffer's memory against the isolate's limit (its allocator refuses an
 * allocation past it: a huge typed array, many buffers, `transfer` to a bigger length all fail with a
 * RangeError), except resizable buffers: V8 reserves their `maxByteLength` and commits pages on `resize()`
 * itself, past the allocator, so a 64 MB isolate held 256 MB of them. The runtime refuses them: the
 * `ArrayBuffer` constructor scripts can reach (the global, and `ArrayBuffer.prototype.constructor`, which a
 * buffer's `.constructor` finds) is a stand-in that throws when given `maxByteLength` and otherwise makes
 * a fixed-length buffer. Nothing else makes a resizable buffer (growable SharedArrayBuffers and WebAssembly
 * memories went with their globals, bootstrap.ts).
 */
export function refuseResizableArrayBuffers(): void {
  const NativeArrayBuffer = globalObject.ArrayBuffer;
  const prototype = NativeArrayBuffer.prototype;
  function ArrayBuffer(this: unknown, length?: unknown, options?: unknown): ArrayBuffer {
    if (new.target === undefined) throw new TypeErrorCtor("Constructor ArrayBuffer requires 'new'");
    // Read once (a getter could answer differently a second time); the native constructor never sees it.
    const maxByteLength =
      options !== null && (typeof options === "object" || typeof options === "function")
        ? (options as { maxByteLength?: unknown }).maxByteLength
        : undefined;
    if (maxByteLength !== undefined)
      throw new RangeErrorCtor("resizable ArrayBuffers are not available in the sandbox: their memory is outside the isolate's limit");
    return ReflectConstruct(NativeArrayBuffer, [length], new.target) as ArrayBuffer;
  }
  const hidden = (value: unknown) => ({ value, writable: true, enumerable: false, configurable: true });
  ObjectDefineProperty(ArrayBuffer, "prototype", { value: prototype, writable: false, enumerable: false, configurable: false });
  ObjectDefineProperty(ArrayBuffer, "length", { value: 1, writable: false, enumerable: false, configurable: true });
  ObjectDefineProperty(ArrayBuffer, "isView", hidden(NativeArrayBuffer.isView));
  ObjectDefineProperty(ArrayBuffer, Symbol.species, {
    get(this: unknown) {
      return this;
    },
    enumerable: false,
    configurable: true,
  });
  ObjectDefineProperty(prototype, "constructor", hidden(ArrayBuffer));
  ObjectDefineProperty(globalObject, "ArrayBuffer", hidden(ArrayBuffer));
}
