import {
  ArrayIsArray,
  ArrayPrototypeJoin,
  JSONStringify,
  ObjectHasOwn,
  ObjectKeys,
  StringPrototypeSlice,
  defineData,
  dict,
} from "./primordials.js";
import { isGuestDataError, toBoundedJson } from "./serialize.js";
import { isOwn, markOwn } from "./own-errors.js";
import { SCHEMA_LIMITS } from "../src/schema/limits.js";

/** Thrown while reading a script's default export: becomes SCRIPT_LOAD with this message. */
export class DefinitionError {
  constructor(readonly message: string) {
    markOwn(this);
  }
}

/** Whether `thrown` is a DefinitionError, without running anything of a script's (own-errors.ts). */
export function isDefinitionError(thrown: unknown): thrown is DefinitionError {
  return isOwn(thrown) && thrown instanceof DefinitionError;
}

type Fn = (...args: unknown[]) => unknown;

/** What the runtime keeps per context: the script's callables by name. */
export interface LoadedScript {
  middleware: Record<string, Fn>;
  tools: Record<string, Fn>;
  hooks: Record<string, Fn>;
}

/** What crosses to the host (validated further there: names, JSON Schemas). */
export interface RawManifest {
  name?: string;
  onHookError?: unknown;
  middleware: string[];
  tools: { name: string; description: string; parameters: string }[];
  hooks: string[];
}

const TOP_LEVEL = dict<true>();
TOP_LEVEL.name = true;
TOP_LEVEL.onHookError = true;
TOP_LEVEL.middleware = true;
TOP_LEVEL.tools = true;
TOP_LEVEL.hooks = true;
const HOOKS = dict<true>();
HOOKS.beforeToolCall = true;
HOOKS.afterToolCall = true;
HOOKS.onToolError = true;
HOOKS.beforeRun = true;
HOOKS.beforeFinish = true;
const TOOL_FIELDS = dict<true>();
TOOL_FIELDS.name = true;
TOOL_FIELDS.description = true;
TOOL_FIELDS.parameters = true;
TOOL_FIELDS.handler = true;

function fail(message: string): never {
  throw new DefinitionError(message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !ArrayIsArray(value);
}

function checkKeys(value: Record<string, unknown>, allowed: Record<string, true>, where: string): void {
  const keys = ObjectKeys(value);
  for (let i = 0; i < keys.length; i++) {
    if (allowed[keys[i]] !== true)
      fail(where + " has an unknown field " + JSONStringify(keys[i]) + " (allowed: " + ArrayPrototypeJoin(ObjectKeys(allowed), ", ") + ")");
  }
}

function readList(value: unknown, where: string): unknown[] {
  if (value === undefined) return [];
  if (!ArrayIsArray(value)) fail(where + " must be an array");
  const out: unknown[] = [];
  const length = (value as unknown[]).length;
  for (let i = 0; i < length; i++) defineData(out, i, (value as unknown[])[i]);
  return out;
}

/**
 * Checks the default export's shape and splits it into callables (kept here) and a manifest (sent out). Without
 * `withManifest` (a run's context), the tools' parameters are not serialized: the manifest is then incomplete.
 */
export function readDefinition(
  exported: unknown,
  maxSchemaBytes: number,
  withManifest = true,
): { script: LoadedScript; manifest: RawManifest } {
  if (!isObject(exported)) fail("the default export must be defineScript({...}), got " + (exported === null ? "null" : typeof exported));
  checkKeys(exported, TOP_LEVEL, "defineScript({...})");
  const script: LoadedScript = { middleware: dict<Fn>(), tools: dict<Fn>(), hooks: dict<Fn>() };
  const manifest: RawManifest = { middleware: [], tools: [], hooks: [] };
  const name = exported.name;
  if (name !== undefined && typeof name !== "string") fail("name must be a string");
  // Defined, not assigned: a setter a script put on Object.prototype never sees them.
  if (name !== undefined) defineData(manifest, "name", name);
  if (exported.onHookError !== undefined) defineData(manifest, "onHookError", exported.onHookError);

  const middleware = readList(exported.middleware, "middleware");
  for (let i = 0; i < middleware.length; i++) {
    const entry = middleware[i];
    let mwName: unknown;
    let run: unknown;
    if (typeof entry === "function") {
      mwName = (entry as Fn).name;
      run = entry;
    } else if (isObject(entry)) {
      mwName = entry.name;
      run = entry.run;
    } else fail("middleware[" + i + "] must be a named function or { name, run }");
    if (typeof mwName !== "string" || mwName === "") fail("middleware[" + i + "] has no name: use a named function or { name, run }");
    if (typeof run !== "function") fail("middleware[" + i + "] (" + mwName + "): run must be a function");
    if (ObjectHasOwn(script.middleware, mwName as string)) fail("middleware name " + JSONStringify(mwName) + " is used twice");
    script.middleware[mwName as string] = run as Fn;
    defineData(manifest.middleware, i, mwName);
  }

  const tools = readList(exported.tools, "tools");
  if (tools.length > SCHEMA_LIMITS.maxToolsPerScript) {
    fail("tools: " + tools.length + " tools is over the limit of " + SCHEMA_LIMITS.maxToolsPerScript + " per script");
  }
  for (let i = 0; i < tools.length; i++) {
    const tool = tools[i];
    const where = "tools[" + i + "]";
    if (!isObject(tool)) fail(where + " must be an object { name, description, parameters, handler }");
    checkKeys(tool, TOOL_FIELDS, where);
    if (typeof tool.name !== "string" || tool.name === "") fail(where + ".name must be a non-empty string");
    if (tool.description !== undefined && typeof tool.description !== "string") fail(where + ".description must be a string");
    if (typeof tool.handler !== "function") fail(where + " (" + tool.name + "): handler must be a function");
    if (ObjectHasOwn(script.tools, tool.name)) fail("tool name " + JSONStringify(tool.name) + " is used twice");
    let parameters = "";
    if (withManifest && tool.parameters !== undefined) {
      try {
        parameters = toBoundedJson(
          tool.parameters,
          maxSchemaBytes < SCHEMA_LIMITS.maxSchemaBytes ? maxSchemaBytes : SCHEMA_LIMITS.maxSchemaBytes,
        );
      } catch (error) {
        if (isGuestDataError(error)) fail(where + ".parameters" + StringPrototypeSlice(error.path, 1) + " " + error.problem);
        throw error;
      }
    }
    script.tools[tool.name] = tool.handler as Fn;
    defineData(manifest.tools, i, { name: tool.name, description: (tool.description as string | undefined) ?? "", parameters });
  }

  const hooks = exported.hooks;
  if (hooks !== undefined) {
    if (!isObject(hooks)) fail("hooks must be an object { " + ArrayPrototypeJoin(ObjectKeys(HOOKS), "?, ") + "? }");
    const names = ObjectKeys(hooks);
    for (let i = 0; i < names.length; i++) {
      const hookName = names[i];
      if (HOOKS[hookName] !== true)
        fail("hooks has an unknown hook " + JSONStringify(hookName) + " (known: " + ArrayPrototypeJoin(ObjectKeys(HOOKS), ", ") + ")");
      const fn = hooks[hookName];
      if (fn === undefined) continue;
      if (typeof fn !== "function") fail("hooks." + hookName + " must be a function");
      script.hooks[hookName] = fn as Fn;
      defineData(manifest.hooks, manifest.hooks.length, hookName);
    }
  }
  return { script, manifest };
}
