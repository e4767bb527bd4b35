import { HookboxError } from "../errors.js";
import type { JsonObject } from "../turns/json.js";
import { HOOK_NAMES, ON_HOOK_ERROR, type HookName } from "../turns/keys.gen.js";
import type { OnHookError, ScriptManifest, ScriptToolManifest } from "./api.js";
import type { Bundle } from "./bundle-output.js";
import { SCHEMA_LIMITS } from "../schema/limits.js";
import type { ToolSchemas } from "../schema/tool-schemas.js";

/** The runtime's view of a default export, before the host's checks. */
interface RawManifest {
  name?: unknown;
  onHookError?: unknown;
  middleware: string[];
  tools: { name: string; description: string; parameters: string }[];
  hooks: string[];
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** A script's name goes into every event and span of its calls: short, and plain like a tool's or a tenant's. */
const SCRIPT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
const DEFAULT_PARAMETERS: JsonObject = { type: "object", properties: {} };

function loadError(bundle: Bundle, message: string): HookboxError {
  return new HookboxError("SCRIPT_LOAD", `${bundle.displayPath}: ${message}`, { file: bundle.displayPath });
}

/**
 * Host-side checks of a script's definition: names, onHookError, the tool count and each tool's `parameters`
 * (the schema rules and ajv's meta-schema, through the tenant's own `schemas`; compiled later, on first use).
 */
export function validateManifest(rawText: string, bundle: Bundle, schemas: ToolSchemas): ScriptManifest {
  const raw = JSON.parse(rawText) as RawManifest;
  const name = raw.name ?? bundle.defaultName;
  if (typeof name !== "string" || name.trim() === "") throw loadError(bundle, "name must be a non-empty string");
  if (!SCRIPT_NAME.test(name)) {
    const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}...` : name);
    const origin = raw.name === undefined ? ` (from its file name; give defineScript a name)` : "";
    throw loadError(
      bundle,
      `name ${shown}${origin} (${name.length} characters): a script name may use letters, digits, _, . and - (1 to 64 characters, not starting with . or -)`,
    );
  }
  const onHookError = raw.onHookError ?? "fail-closed";
  if (typeof onHookError !== "string" || !(ON_HOOK_ERROR as readonly string[]).includes(onHookError)) {
    throw loadError(bundle, `onHookError must be one of ${ON_HOOK_ERROR.join(", ")}, got ${JSON.stringify(onHookError)}`);
  }
  if (raw.tools.length > SCHEMA_LIMITS.maxToolsPerScript) {
    throw loadError(bundle, `tools: ${raw.tools.length} tools is over the limit of ${SCHEMA_LIMITS.maxToolsPerScript} per script`);
  }
  const tools: ScriptToolManifest[] = raw.tools.map((tool, index) => {
    const where = `tools[${index}] (${tool.name})`;
    if (!TOOL_NAME.test(tool.name)) throw loadError(bundle, `${where}: a tool name may use letters, digits, _ and - (1 to 64 characters)`);
    let parameters = DEFAULT_PARAMETERS;
    if (tool.parameters !== "") {
      if (tool.parameters.length > SCHEMA_LIMITS.maxSchemaBytes) {
        throw loadError(bundle, `${where}: parameters is over the ${SCHEMA_LIMITS.maxSchemaBytes}-byte limit for a schema`);
      }
      const parsed = JSON.parse(tool.parameters) as unknown;
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
        throw loadError(bundle, `${where}: parameters must be a JSON Schema object`);
      if ((parsed as JsonObject).type !== undefined && (parsed as JsonObject).type !== "object") {
        throw loadError(
          bundle,
          `${where}: parameters must describe an object (type "object"), got type ${JSON.stringify((parsed as JsonObject).type)}`,
        );
      }
      const problem = schemas.problem(parsed, tool.parameters);
      if (problem !== undefined) throw loadError(bundle, `${where}: parameters ${problem}`);
      parameters = parsed as JsonObject;
    }
    return { name: tool.name, description: tool.description, parameters };
  });
  return {
    name,
    onHookError: onHookError as OnHookError,
    middleware: raw.middleware,
    tools,
    hooks: raw.hooks.filter((hook): hook is HookName => (HOOK_NAMES as readonly string[]).includes(hook)),
    bundleHash: bundle.hash,
  };
}
