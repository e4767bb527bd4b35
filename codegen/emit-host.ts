import { FAMILY_GROUPS, KEY_FAMILY_NAMES, type Spec } from "./spec.js";
import { quote, shapeZod, tsFor, zodFor } from "./value-types.js";
import { banner, docComment, enumLines, objectLiteral } from "./emit-common.js";

/** src/turns/keys.gen.ts: host constants and TypedKey instances with their zod schemas. */
export function emitHostKeys(spec: Spec): string {
  const out: string[] = [banner("//")];
  out.push(
    'import { z } from "zod";',
    'import { TypedKey, TypedKeyError } from "./typed-key.js";',
    'import { JsonObjectSchema, JsonSchema, type Json, type JsonObject } from "./json.js";',
    "",
  );
  out.push(`export const NAMESPACE = ${quote(spec.namespace)} as const;`, "");

  out.push(`export const BLOCK_KINDS = [${spec.blockKinds.map((kind) => quote(kind.value)).join(", ")}] as const;`);
  out.push("export type BlockKind = (typeof BLOCK_KINDS)[number];");
  out.push(`export const BlockKinds = ${objectLiteral(spec.blockKinds.map((kind) => [kind.constant, quote(kind.value)]))} as const;`, "");
  out.push(`export const PayloadKeys = ${objectLiteral(spec.payloadKeys.map((key) => [key.constant, quote(key.value)]))} as const;`);
  out.push("export type PayloadKey = (typeof PayloadKeys)[keyof typeof PayloadKeys];", "");

  for (const shape of spec.shapes) {
    out.push(...docComment(shape.doc));
    if (shape.kind === "object" && shape.extraJson) {
      // Written out rather than inferred: zod's inferred type puts the optional fields beside a `Json` index
      // signature in one literal, which a consumer's tsc rejects in the published .d.ts (TS2411).
      const fields = Object.entries(shape.fields).map(
        ([name, field]) => `${name}${field.optional ? "?" : ""}: ${tsFor(spec, field.type)};`,
      );
      out.push(`export type ${shape.typeName} = { [field: string]: Json } & { ${fields.join(" ")} };`);
      out.push(`export const ${shape.typeName}Schema: z.ZodType<${shape.typeName}> = ${shapeZod(spec, shape)};`, "");
      continue;
    }
    out.push(`export const ${shape.typeName}Schema = ${shapeZod(spec, shape)};`);
    out.push(`export type ${shape.typeName} = z.infer<typeof ${shape.typeName}Schema>;`, "");
  }

  const typed = spec.blockKinds.filter((kind) => kind.payload !== undefined);
  out.push(
    "/** The payload schema of each block kind that has one (kinds without one carry any JSON object). */",
    `export const BlockPayloadSchemas = ${objectLiteral(typed.map((kind) => [kind.value, zodFor(spec, kind.payload!)]))} as const;`,
    "export type BlockPayloads = { [K in keyof typeof BlockPayloadSchemas]: z.infer<(typeof BlockPayloadSchemas)[K]> };",
    "",
  );

  for (const family of KEY_FAMILY_NAMES) {
    const keys = spec.keys.filter((key) => key.family === family);
    const entries = keys.map((key): [string, string, string?] => [
      key.constant,
      `new TypedKey(${quote(key.id)}, ${quote(family)}, ${zodFor(spec, key.type)})`,
      key.doc,
    ]);
    out.push(`export const ${FAMILY_GROUPS[family].host} = ${objectLiteral(entries)};`, "");
  }

  for (const keyFamily of spec.keyFamilies) {
    out.push(`const ${keyFamily.function}Schema = ${zodFor(spec, keyFamily.type)};`);
    out.push(
      ...docComment(
        `${keyFamily.doc ?? ""} Key family \`${keyFamily.prefix}.<suffix>@v${keyFamily.version}\` (${keyFamily.family}).`.trim(),
      ),
    );
    // The value's type spelled out (not `typeof` the unexported schema), so the published declarations name no internal.
    out.push(`export function ${keyFamily.function}(suffix: string): TypedKey<${tsFor(spec, keyFamily.type)}> {`);
    out.push(`  const id = \`${keyFamily.prefix}.\${suffix}@v${keyFamily.version}\`;`);
    out.push("  if (!KEY_SUFFIX.test(suffix)) throw new TypedKeyError(id, \"suffix must be non-empty letters, digits, '_', '-' or '.'\");");
    out.push(`  return new TypedKey(id, ${quote(keyFamily.family)}, ${keyFamily.function}Schema);`);
    out.push("}", "");
  }
  if (spec.keyFamilies.length > 0) out.push("const KEY_SUFFIX = /^[A-Za-z0-9_.-]+$/;", "");

  out.push(...enumLines(spec, "host"));
  return `${out.join("\n").trimEnd()}\n`;
}
