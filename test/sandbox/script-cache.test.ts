import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bundleScript, useScriptCache } from "../../src/sandbox/bundler.js";
import { DEFAULT_BUNDLE_BOUNDS } from "../../src/sandbox/bundle-guard.js";
import { ScriptCache } from "../../src/sandbox/script-cache.js";

/* What the disk cache of bundles hands back, and what it refuses to (src/sandbox/script-cache.ts). */

function cacheAndScript() {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-script-cache-unit-"));
  const script = join(dir, "policy.ts");
  writeFileSync(join(dir, "reason.ts"), `export const reason = "imported";\n`);
  writeFileSync(
    script,
    `import { reason } from "./reason";\nexport default { name: "policy", hooks: { beforeToolCall: () => ({ action: "deny", reason }) } };\n`,
  );
  const cache = ScriptCache.open(join(dir, "cache"));
  if (!(cache instanceof ScriptCache)) throw new Error(cache.problem);
  return { dir, script, cache };
}

describe("the script cache on disk", () => {
  afterEach(() => useScriptCache(undefined));

  it("hands back the bundle esbuild built, while every file it was built from is unchanged", async () => {
    const { dir, script, cache } = cacheAndScript();
    useScriptCache(cache);
    const built = await bundleScript({ path: script });
    const kept = cache.bundle({ path: script }, DEFAULT_BUNDLE_BOUNDS, "policy.ts");
    expect(kept?.bundle.hash).toBe(built.hash);
    expect(kept?.bundle.code).toBe(built.code);
    expect(kept?.inputs.sort()).toEqual([join(dir, "policy.ts"), join(dir, "reason.ts")].sort());
    // Other bounds are another entry: a bundle checked against larger limits is not taken under smaller ones.
    expect(cache.bundle({ path: script }, { ...DEFAULT_BUNDLE_BOUNDS, maxBundleBytes: 10 }, "policy.ts")).toBeUndefined();
    // An imported file edited since: a miss.
    writeFileSync(join(dir, "reason.ts"), `export const reason = "edited";\n`);
    expect(cache.bundle({ path: script }, DEFAULT_BUNDLE_BOUNDS, "policy.ts")).toBeUndefined();
  });

  it("refuses a bundle file whose content no longer has the hash it is named by", async () => {
    const { script, cache } = cacheAndScript();
    useScriptCache(cache);
    await bundleScript({ path: script });
    const bundles = join(cache.dir, "bundles");
    const [file] = readdirSync(bundles);
    const entry = JSON.parse(readFileSync(join(bundles, file), "utf8")) as { code: string };
    writeFileSync(join(bundles, file), JSON.stringify({ ...entry, code: entry.code.replace('"deny"', '"none"') }));
    expect(cache.bundle({ path: script }, DEFAULT_BUNDLE_BOUNDS, "policy.ts")).toBeUndefined();
    writeFileSync(join(bundles, file), "{ not json");
    expect(cache.bundle({ path: script }, DEFAULT_BUNDLE_BOUNDS, "policy.ts")).toBeUndefined();
  });
});
