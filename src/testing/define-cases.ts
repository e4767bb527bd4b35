import type { CaseFile, CaseInput, HookExpectation, PolicyFixtures, CaseStep } from "hookbox/testing";
import type { z } from "zod";
import type { CaseFileInput, HookExpectationSchema } from "./case-schema.js";

/*
 * `export default defineCases({...})` in a `*.cases.ts` file: the case file's shape, typed (types/testing.d.ts),
 * for cases that need code (computed inputs, a `check(got)` function). It returns its argument; `hookbox test`
 * checks it as it checks a `*.cases.json` file.
 */

export function defineCases(file: CaseFile): CaseFile {
  return file;
}

// The published type and the schema `hookbox test` checks files against name the same fields, and whatever the
// type allows the schema's type allows: a field added to one and not the other fails the build here.
type Allowed<A, B> = [A] extends [B] ? true : false;
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
type SchemaCase = CaseFileInput["cases"][number];
const published: [
  Allowed<CaseFile, CaseFileInput>,
  SameKeys<CaseFile, CaseFileInput>,
  SameKeys<CaseFile["cases"][number], SchemaCase>,
  SameKeys<CaseStep, NonNullable<SchemaCase["steps"]>[number]>,
  SameKeys<CaseInput, NonNullable<SchemaCase["input"]>>,
  SameKeys<PolicyFixtures, NonNullable<SchemaCase["fixtures"]>>,
  SameKeys<HookExpectation, z.input<typeof HookExpectationSchema>>,
] = [true, true, true, true, true, true, true];
void published;
