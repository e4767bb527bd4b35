import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { HookboxError } from "../errors.js";
import type { HostTool } from "../loop/tool-registry.js";
import type { HostHooks } from "../loop/hook-provider.js";
import type { HostMiddleware } from "../loop/middleware-chain.js";

/** Trusted host code: the default export is an array of tools; `hooks` and `middleware` exports are optional. */
export interface HostModule {
  tools: HostTool[];
  hooks: HostHooks[];
  middleware: HostMiddleware[];
}

export async function loadHostModule(file: string): Promise<HostModule> {
  const path = resolve(file);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw new HookboxError("CONFIG", `host tools module ${file}: ${(error as Error).message}`);
  }
  const tools = mod.default ?? [];
  if (!Array.isArray(tools)) throw new HookboxError("CONFIG", `host tools module ${file}: the default export must be an array of tools`);
  tools.forEach((tool, index) => {
    const where = `host tools module ${file}: tool [${index}]`;
    if (!tool || typeof tool !== "object") throw new HookboxError("CONFIG", `${where} is not an object`);
    if (typeof tool.name !== "string" || !tool.name) throw new HookboxError("CONFIG", `${where}: name must be a non-empty string`);
    if (typeof tool.handler !== "function") throw new HookboxError("CONFIG", `${where} (${tool.name}): handler must be a function`);
    if (!tool.parameters || typeof tool.parameters !== "object")
      throw new HookboxError("CONFIG", `${where} (${tool.name}): parameters must be a JSON Schema object`);
  });
  const hooks = (mod.hooks ?? []) as HostHooks[];
  const middleware = (mod.middleware ?? []) as HostMiddleware[];
  if (!Array.isArray(hooks)) throw new HookboxError("CONFIG", `host tools module ${file}: export "hooks" must be an array`);
  if (!Array.isArray(middleware)) throw new HookboxError("CONFIG", `host tools module ${file}: export "middleware" must be an array`);
  return { tools: tools.map((t: HostTool) => ({ ...t, description: t.description ?? "" })), hooks, middleware };
}
