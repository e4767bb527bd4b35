import { HookboxError } from "../errors.js";
import type { ToolContext, CodeOrigin } from "../contracts/context.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { ToolDefinition } from "../engine/infer.js";
import { ToolSchemas } from "../schema/tool-schemas.js";
import type { ToolDefinitions } from "../turns/keys.gen.js";

/** A tool as the loop sees it, whatever its origin: one shape, one hook path, one validation. */
export interface RegisteredTool extends ToolDefinition {
  origin: CodeOrigin;
  /** Who defined it, for error messages: "host tools" or "script <name>". */
  owner: string;
  /** Per-tool timeout overriding the run's toolTimeoutMs. */
  timeoutMs?: number;
  /** `maxResultBytes`: the run's per-result budget; a bigger result throws RUN_BUDGET (see run-budget.ts). */
  invoke(args: JsonObject, ctx: ToolContext, signal: AbortSignal, limits?: { maxResultBytes?: number }): Promise<Json>;
}

/** What a trusted host-tools module exports (default export: HostTool[]). */
export interface HostTool {
  name: string;
  description: string;
  parameters: JsonObject;
  timeoutMs?: number;
  handler(args: JsonObject, ctx: ToolContext, options: { signal: AbortSignal }): Json | Promise<Json>;
}

export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();

  /** `schemas` belongs to one tenant's runtime: its ajv instance and compiled validators are that tenant's alone. */
  constructor(private readonly schemas: ToolSchemas = new ToolSchemas()) {}

  add(tool: RegisteredTool): void {
    const existing = this.tools.get(tool.name);
    if (existing) {
      throw new HookboxError("CONFIG", `duplicate tool name "${tool.name}": defined by ${existing.owner} and by ${tool.owner}`);
    }
    // A broken schema fails at registration, not at the first call; compiling waits for the first call.
    const problem = this.schemas.problem(tool.parameters);
    if (problem !== undefined) throw new HookboxError("CONFIG", `${tool.owner}: tool ${tool.name}: parameters ${problem}`);
    this.tools.set(tool.name, tool);
  }

  /** Untrusted names (from the model) are looked up in a Map, so "constructor" is just an unknown tool. */
  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  list(): RegisteredTool[] {
    return [...this.tools.values()];
  }

  /** The tools as the turn's `toolDefinitions` key records them (the model's definitions with each tool's origin). */
  turnDefinitions(): ToolDefinitions {
    return this.list().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, origin: t.origin }));
  }

  definitions(): ToolDefinition[] {
    return this.list().map(({ name, description, parameters }) => ({ name, description, parameters }));
  }

  /** Checks args against the tool's `parameters`; returns a message naming the field, or undefined. */
  checkArgs(tool: RegisteredTool, args: JsonObject): string | undefined {
    const issue = this.argsIssue(tool, args);
    if (!issue) return undefined;
    return `invalid arguments for ${tool.name}: ${issue.pointer || "(root)"} ${issue.message}`;
  }

  /** The first schema violation of `args`: its JSON pointer (`/amount`), path segments and message. */
  argsIssue(tool: RegisteredTool, args: JsonObject): { pointer: string; segments: string[]; message: string } | undefined {
    const checked = this.schemas.check(tool.parameters, args);
    if (checked.valid) return undefined;
    const issue = checked.issue;
    if (!issue) return { pointer: "", segments: [], message: checked.problem ?? "is invalid" };
    const pointer =
      issue.instancePath || (issue.params && "missingProperty" in issue.params ? `/${String(issue.params.missingProperty)}` : "");
    const segments = pointer
      .split("/")
      .slice(1)
      .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"));
    return { pointer, segments, message: issue.message ?? "is invalid" };
  }
}
