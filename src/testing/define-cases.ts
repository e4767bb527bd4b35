import type { CaseFileInput } from "./case-schema.js";

/*
 * `export default defineCases({...})` in a `*.cases.ts` file: the case file's shape, typed, for cases that need
 * code (computed inputs, a `check(got)` function). It returns its argument; `hookbox test` checks it as it checks
 * a `*.cases.json` file.
 */

/** A case file as a `*.cases.ts` file writes it (docs/testing.md, "The case file"). */
export type CaseFile = CaseFileInput;

export function defineCases(file: CaseFile): CaseFile {
  return file;
}
