import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { loadSpec } from "../../codegen/generate.js";
import { FAMILY_GROUPS, KEY_FAMILY_NAMES } from "../../codegen/spec.js";
import { tsFor } from "../../codegen/value-types.js";
import * as hostKeys from "../../src/turns/keys.gen.js";
import * as runtime from "../../runtime/constants.gen.js";
import { root } from "./helpers.js";

/*
 * The spec, the host constants, the sandbox constants and types/turns.d.ts must say the same thing.
 * The .d.ts is read with the TypeScript compiler (declared names and literal types), not with a regex.
 */

const spec = loadSpec(join(root, "codegen/spec.json"));

function loadDts() {
  const file = join(root, "types/turns.d.ts");
  const program = ts.createProgram([file], { strict: true, noEmit: true, types: [] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const moduleSymbol = checker.getSymbolAtLocation(source)!;
  const exports = new Map(checker.getExportsOfModule(moduleSymbol).map((symbol) => [symbol.name, symbol]));
  const typeOfExport = (name: string): ts.Type => {
    const symbol = exports.get(name);
    if (!symbol) throw new Error(`types/turns.d.ts does not export ${name}`);
    return checker.getTypeOfSymbolAtLocation(symbol, source);
  };
  const declaredType = (name: string): ts.Type => checker.getDeclaredTypeOfSymbol(exports.get(name)!);
  const property = (type: ts.Type, name: string): ts.Type => {
    const symbol = type.getProperty(name);
    if (!symbol) throw new Error(`no property ${name} in ${checker.typeToString(type)}`);
    return checker.getTypeOfSymbolAtLocation(symbol, source);
  };
  const literal = (type: ts.Type): unknown => (type.isLiteral() ? type.value : `<not a literal: ${checker.typeToString(type)}>`);
  const tupleLiterals = (type: ts.Type): unknown[] => checker.getTypeArguments(type as ts.TypeReference).map(literal);
  const unionLiterals = (type: ts.Type): unknown[] => (type.isUnion() ? type.types : [type]).map(literal);
  return {
    checker,
    exports,
    typeOfExport,
    declaredType,
    property,
    literal,
    tupleLiterals,
    unionLiterals,
    diagnostics: ts.getPreEmitDiagnostics(program),
  };
}

const dts = loadDts();

describe("codegen parity: spec = host = sandbox = types/turns.d.ts", () => {
  it("the .d.ts compiles on its own", () => {
    expect(dts.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, " "))).toEqual([]);
  });

  it("agrees on the namespace", () => {
    expect(hostKeys.NAMESPACE).toBe(spec.namespace);
    expect(runtime.NAMESPACE).toBe(spec.namespace);
    expect(dts.literal(dts.typeOfExport("NAMESPACE"))).toBe(spec.namespace);
  });

  it("agrees on block kinds, their constants and the BlockKind union", () => {
    const values = spec.blockKinds.map((kind) => kind.value);
    const constants = Object.fromEntries(spec.blockKinds.map((kind) => [kind.constant, kind.value]));
    expect([...hostKeys.BLOCK_KINDS]).toEqual(values);
    expect([...runtime.BLOCK_KINDS]).toEqual(values);
    expect(dts.tupleLiterals(dts.typeOfExport("BLOCK_KINDS"))).toEqual(values);
    expect(dts.unionLiterals(dts.declaredType("BlockKind")).sort()).toEqual([...values].sort());
    expect(hostKeys.BlockKinds).toEqual(constants);
    expect(runtime.BlockKinds).toEqual(constants);
    const declared = dts.typeOfExport("BlockKinds");
    expect(Object.fromEntries(declared.getProperties().map((p) => [p.name, dts.literal(dts.property(declared, p.name))]))).toEqual(
      constants,
    );
  });

  it("agrees on payload keys", () => {
    const constants = Object.fromEntries(spec.payloadKeys.map((key) => [key.constant, key.value]));
    expect(hostKeys.PayloadKeys).toEqual(constants);
    expect(runtime.PayloadKeys).toEqual(constants);
    const declared = dts.typeOfExport("PayloadKeys");
    expect(Object.fromEntries(declared.getProperties().map((p) => [p.name, dts.literal(dts.property(declared, p.name))]))).toEqual(
      constants,
    );
  });

  it("agrees on every key: group, constant, id, family and value type", () => {
    const declaredKeys = dts.typeOfExport("keys");
    for (const family of KEY_FAMILY_NAMES) {
      const expected = spec.keys.filter((key) => key.family === family);
      const { host, runtime: group } = FAMILY_GROUPS[family];
      const hostGroup = (hostKeys as unknown as Record<string, Record<string, { id: string; family: string }>>)[host]!;
      const runtimeGroup = (runtime.keys as unknown as Record<string, Record<string, { id: string; family: string; type: string }>>)[
        group
      ]!;
      const dtsGroup = dts.property(declaredKeys, group);
      expect(Object.keys(hostGroup), host).toEqual(expected.map((key) => key.constant));
      expect(Object.keys(runtimeGroup), group).toEqual(expected.map((key) => key.constant));
      expect(
        dtsGroup.getProperties().map((p) => p.name),
        group,
      ).toEqual(expected.map((key) => key.constant));
      for (const key of expected) {
        expect(hostGroup[key.constant]).toMatchObject({ id: key.id, family });
        expect(runtimeGroup[key.constant]).toEqual({ id: key.id, family, type: key.type });
        const declared = dts.property(dtsGroup, key.constant);
        expect(dts.literal(dts.property(declared, "id")), key.id).toBe(key.id);
        expect(dts.literal(dts.property(declared, "family")), key.id).toBe(family);
        const valueType = dts.property(declared, "__valueType").getNonNullableType();
        expect(dts.checker.typeToString(valueType), key.id).toBe(tsFor(spec, key.type));
      }
    }
  });

  it("agrees on key families", () => {
    for (const family of spec.keyFamilies) {
      const hostKey = (hostKeys as unknown as Record<string, (suffix: string) => { id: string; family: string }>)[family.function]!("x");
      expect(hostKey).toMatchObject({ id: `${family.prefix}.x@v${family.version}`, family: family.family });
      expect((runtime.KEY_FAMILIES as Record<string, unknown>)[family.function]).toEqual({
        prefix: family.prefix,
        version: family.version,
        family: family.family,
        type: family.type,
      });
      const signature = dts.typeOfExport(family.function).getCallSignatures()[0]!;
      const returned = signature.getReturnType();
      expect(dts.literal(dts.property(returned, "family"))).toBe(family.family);
      expect(dts.checker.typeToString(dts.property(returned, "id"))).toBe(`\`${family.prefix}.\${S}@v${family.version}\``);
    }
  });

  it("agrees on every enum and its element type", () => {
    for (const item of spec.enums) {
      expect([...(hostKeys as unknown as Record<string, readonly string[]>)[item.constant]!], item.constant).toEqual(item.values);
      expect([...(runtime as unknown as Record<string, readonly string[]>)[item.constant]!], item.constant).toEqual(item.values);
      expect(dts.tupleLiterals(dts.typeOfExport(item.constant)), item.constant).toEqual(item.values);
      if (item.typeName) expect(dts.unionLiterals(dts.declaredType(item.typeName)).sort(), item.typeName).toEqual([...item.values].sort());
    }
  });
});
