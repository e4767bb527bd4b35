import { describe, expect, it, vi } from "vitest";
import { recordTenantConfig } from "../../src/session/tenant-record.js";
import { jsonOf } from "../../src/turns/known-json.js";
import type { TenantConfig } from "../../src/host/types.js";

describe("a session's record of its tenant", () => {
  const config: TenantConfig = {
    name: "record-test",
    scripts: [{ filename: "policy.ts", source: "export default {};" }],
    model: "scripted:model.json",
    capabilities: { fetch: { allow: ["https://api.example.com/"] } },
  } as unknown as TenantConfig;

  it("is one frozen copy while the config is unchanged, whose text is the one recorded, not serialized again", async () => {
    const first = await recordTenantConfig(config);
    const second = await recordTenantConfig(config);
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.scripts)).toBe(true);
    const stringify = vi.spyOn(JSON, "stringify");
    const text = jsonOf(first);
    expect(stringify).not.toHaveBeenCalled();
    stringify.mockRestore();
    expect(text).toBe(JSON.stringify(JSON.parse(text)));
    expect(JSON.parse(text)).toEqual(first);
    expect(JSON.parse(text)).toMatchObject({ name: "record-test", scripts: [{ filename: "policy.ts", source: "export default {};" }] });
  });

  it("is a new copy, with its own text, once the config changes", async () => {
    const before = await recordTenantConfig(config);
    const after = await recordTenantConfig({ ...config, model: "scripted:other.json" } as unknown as TenantConfig);
    expect(after).not.toBe(before);
    expect(JSON.parse(jsonOf(after))).toMatchObject({ model: "scripted:other.json" });
  });
});
