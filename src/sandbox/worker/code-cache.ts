import ivm from "isolated-vm";

/** compileScriptSync sets these on the script it returns (the .d.ts omits them). */
type CompiledScript = ivm.Script & { cachedData?: ivm.ExternalCopy<ArrayBuffer>; cachedDataRejected?: boolean };

interface CachedCode {
  code: string;
  filename: string;
  /** V8 code cache we produced ourselves from our own compile (never accepted from users). */
  cachedData?: ivm.ExternalCopy<ArrayBuffer>;
}

/** Bundles by content hash, plus V8 code caches so each new tenant isolate compiles them cheaply. */
export class CodeCache {
  private readonly entries = new Map<string, CachedCode>();

  add(hash: string, code: string, filename: string): void {
    if (!this.entries.has(hash)) this.entries.set(hash, { code, filename });
  }

  compile(isolate: ivm.Isolate, hash: string): ivm.Script {
    const entry = this.entries.get(hash);
    if (entry === undefined) throw new Error(`bundle ${hash} was never sent to this worker`);
    if (entry.cachedData !== undefined) {
      const script = isolate.compileScriptSync(entry.code, { filename: entry.filename, cachedData: entry.cachedData }) as CompiledScript;
      if (!script.cachedDataRejected) return script;
    }
    const script = isolate.compileScriptSync(entry.code, { filename: entry.filename, produceCachedData: true }) as CompiledScript;
    if (script.cachedData !== undefined) entry.cachedData = script.cachedData;
    return script;
  }
}
