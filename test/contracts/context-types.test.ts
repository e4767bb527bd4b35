import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { scriptCompilerOptions, hookboxTypesDir } from "../../src/check/compile.js";
import { UserContextSchema } from "../../src/turns/keys.gen.js";
import { root } from "../codegen/helpers.js";

/*
 * The ctx and payload types scripts compile against (types/hookbox.d.ts) must have the fields the host builds
 * (src/contracts/context.ts): same names, same optionality, same types. Read with the compiler API.
 */

const INTERFACES = [
  "RunIds",
  "Budget",
  "CommonContext",
  "MiddlewareContext",
  "ToolContext",
  "ToolCallRef",
  "ToolErrorInfo",
  "HookPayloadBase",
  "BeforeToolCallPayload",
  "AfterToolCallPayload",
  "OnToolErrorPayload",
  "BeforeRunPayload",
  "BeforeFinishPayload",
];

/**
 * Deliberate differences: the script side types call args loosely so `p.call.args.amount > 100` compiles, and
 * names the generated UserContext (compared field by field below) where the host spells out zod's inferred type.
 */
const LOOSENED: Record<string, string> = {
  "ToolCallRef.args": "ToolArgs",
  "*.userContext": "?UserContext",
  "BeforeRunPayload.userContext": "UserContext",
  // The generated ToolOrigin, which the host reads from keys.gen.ts where zod spells out its union.
  "ToolCallRef.origin": "ToolOrigin",
};

function shapes() {
  const hostFile = join(root, "src/contracts/context.ts");
  const scriptFile = join(hookboxTypesDir(), "hookbox.d.ts");
  const program = ts.createProgram([hostFile, scriptFile], { ...scriptCompilerOptions(), types: [] });
  const checker = program.getTypeChecker();
  const describeModule = (file: string) => {
    const source = program.getSourceFile(file)!;
    const exports = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).map((symbol) => [symbol.name, symbol]));
    return (name: string) => {
      const symbol = exports.get(name);
      if (!symbol) return undefined;
      const type = checker.getDeclaredTypeOfSymbol(symbol);
      return Object.fromEntries(
        checker.getPropertiesOfType(type).map((property) => {
          const optional = (property.flags & ts.SymbolFlags.Optional) !== 0;
          const propertyType = checker.getTypeOfSymbolAtLocation(property, source);
          return [
            property.name,
            `${optional ? "?" : ""}${checker.typeToString(optional ? propertyType.getNonNullableType() : propertyType)}`,
          ];
        }),
      );
    };
  };
  return { host: describeModule(hostFile), script: describeModule(scriptFile) };
}

describe("context and payload types: types/hookbox.d.ts agrees with src/contracts/context.ts", () => {
  const { host, script } = shapes();

  for (const name of INTERFACES) {
    it(`${name} has the same fields, optionality and types`, () => {
      const hostShape = host(name);
      const scriptShape = script(name);
      expect(hostShape, `src/contracts/context.ts exports ${name}`).toBeDefined();
      expect(scriptShape, `types/hookbox.d.ts exports ${name}`).toBeDefined();
      const expected = { ...hostShape };
      for (const [path, looseType] of Object.entries(LOOSENED)) {
        const [owner, field] = path.split(".");
        if (owner === "*" && field && field in expected && !Object.hasOwn(LOOSENED, `${name}.${field}`)) expected[field] = looseType;
        if (owner === name && field && field in expected) expected[field] = looseType;
      }
      expect(scriptShape).toEqual(expected);
    });
  }

  it("UserContext has the same named fields and optionality on both sides", () => {
    const fields = (shape: Record<string, string> | undefined) =>
      Object.fromEntries(Object.entries(shape ?? {}).map(([field, type]) => [field, type.startsWith("?") ? "optional" : "required"]));
    expect(fields(script("UserContext"))).toEqual(fields(host("UserContext")));
    expect(Object.keys(host("UserContext") ?? {}).sort()).toEqual(["originalUserRequest", "projectId", "timestampMs", "userId"]);
  });

  // One schema for the user context (the key's, keys.gen.ts): the contract's type is the key's type.
  it("the UserContext schema accepts the named fields with their types, plus any JSON extras", () => {
    const samples: unknown[] = [
      { originalUserRequest: "r", timestampMs: 1 },
      { originalUserRequest: "r", timestampMs: 1, userId: "u", projectId: "p", extra: { deep: [1] } },
      { originalUserRequest: "r" },
      { timestampMs: 1 },
      { originalUserRequest: "r", timestampMs: "1" },
      { originalUserRequest: "r", timestampMs: 1, userId: 5 },
      "r",
      null,
    ];
    expect(samples.map((sample) => UserContextSchema.safeParse(sample).success)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
