import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { linearRegExpEngine } from "./linear-regexp.js";
import { schemaRuleProblem } from "./schema-rules.js";
import { linearUniqueItems } from "./unique-items.js";

/** The outcome of checking a tool's arguments: ajv's first error when they are invalid. */
export type ArgsCheck = { valid: true } | { valid: false; issue: ErrorObject | undefined; problem?: string };

/**
 * The tool schemas of one owner (a tenant's runtime, a tenant's sandbox): its own ajv instance, so an `$id`
 * or a compiled schema of one tenant is never seen by another. Schemas are checked against the rules
 * (schema-rules.ts) and ajv's meta-schema when a tool is registered, and compiled on their first use,
 * so loading a script with many tools stays cheap. The meta-schema check runs on one ajv instance shared by all
 * owners: it reads the schema as data and registers nothing, and compiling the meta-schema for each tenant's
 * instance was most of a tenant's build. Patterns run on RE2, `uniqueItems` in linear time;
 * ajv logs nothing (its warnings would quote the schema), `format` is an annotation.
 */
export class ToolSchemas {
  private ajvInstance: Ajv | undefined;
  private readonly checked = new WeakSet<object>();
  private readonly compiled = new WeakMap<object, ValidateFunction>();

  private get ajv(): Ajv {
    // Schemas reach `compile` only after `problem` checked them against the meta-schema (with the shared instance).
    this.ajvInstance ??= newAjv({ validateSchema: false });
    return this.ajvInstance;
  }

  /** Why `schema` cannot be a tool's `parameters` ("is ...", "at #/path: ..."), or undefined. `text` is its JSON when the caller has it. */
  problem(schema: object, text?: string): string | undefined {
    if (this.checked.has(schema)) return undefined;
    const broken = schemaRuleProblem(text ?? JSON.stringify(schema), schema);
    if (broken !== undefined) return broken;
    try {
      const meta = metaSchemaChecker();
      if (meta.validateSchema(schema) !== true) {
        const issue = meta.errors?.[0];
        return `is not a valid JSON Schema: ${issue ? `${issue.instancePath || "(root)"} ${issue.message ?? "is invalid"}` : "refused by the meta-schema"}`;
      }
    } catch (error) {
      return `is not a valid JSON Schema: ${(error as Error).message.slice(0, 200)}`;
    }
    this.checked.add(schema);
    return undefined;
  }

  /** Checks `args`; anything but `true` from the validator (a promise, a throw) counts as invalid. */
  check(schema: object, args: unknown): ArgsCheck {
    let validate: ValidateFunction;
    try {
      validate = this.validator(schema);
    } catch (error) {
      return {
        valid: false,
        issue: undefined,
        problem: `its parameters schema cannot be compiled: ${(error as Error).message.slice(0, 200)}`,
      };
    }
    try {
      const outcome: unknown = validate(args);
      if (outcome === true) return { valid: true };
      // A promise (an asynchronous schema the rules missed) must not become an unhandled rejection.
      if (outcome instanceof Promise) outcome.catch(() => undefined);
      return { valid: false, issue: validate.errors?.[0] ?? undefined };
    } catch (error) {
      return { valid: false, issue: undefined, problem: `the check failed: ${(error as Error).message.slice(0, 200)}` };
    }
  }

  private validator(schema: object): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (validate === undefined) {
      const problem = this.problem(schema);
      if (problem !== undefined) throw new Error(`the schema ${problem}`);
      validate = this.ajv.compile(schema);
      this.compiled.set(schema, validate);
    }
    return validate;
  }
}

let sharedMetaChecker: Ajv | undefined;

/** The instance that checks schemas against the meta-schema, for every owner (see ToolSchemas). */
function metaSchemaChecker(): Ajv {
  sharedMetaChecker ??= newAjv({ validateSchema: true });
  return sharedMetaChecker;
}

function newAjv({ validateSchema }: { validateSchema: boolean }): Ajv {
  const ajv = new Ajv({
    strict: false,
    allErrors: false,
    logger: false,
    addUsedSchema: false,
    validateFormats: false,
    validateSchema,
    code: { regExp: linearRegExpEngine },
  });
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword(linearUniqueItems);
  return ajv;
}
