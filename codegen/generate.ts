import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { HookboxError } from "../src/errors.js";
import { emitHostKeys } from "./emit-host.js";
import { emitRuntimeConstants } from "./emit-runtime.js";
import { emitTurnsDts } from "./emit-dts.js";
import { validateSpec } from "./validate.js";
import type { Spec } from "./spec.js";

export const SPEC_PATH = "codegen/spec.json";

/** Every generated file, path relative to the package root. */
export const GENERATED_FILES = {
  hostKeys: "src/turns/keys.gen.ts",
  runtimeConstants: "runtime/constants.gen.ts",
  turnsDts: "types/turns.d.ts",
} as const;

export interface GeneratedFile {
  path: string;
  content: string;
}

/** Reads and validates a spec file. `label` is how errors name it (relative path for the default spec). */
export function loadSpec(file: string, label: string = file): Spec {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new HookboxError("CONFIG", `${label}: cannot read the codegen spec: ${(error as Error).message}`, { file: label });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new HookboxError("CONFIG", `${label}: not valid JSON: ${(error as Error).message}`, { file: label });
  }
  return validateSpec(raw, label);
}

/** Renders every output from a validated spec; pure, so --check and tests can compare without writing. */
export function renderAll(spec: Spec): GeneratedFile[] {
  return [
    { path: GENERATED_FILES.hostKeys, content: emitHostKeys(spec) },
    { path: GENERATED_FILES.runtimeConstants, content: emitRuntimeConstants(spec) },
    { path: GENERATED_FILES.turnsDts, content: emitTurnsDts(spec) },
  ];
}

/** Writes the outputs under `outRoot`. Validation happened in loadSpec, so a bad spec writes nothing. */
export function writeAll(outRoot: string, files: GeneratedFile[]): string[] {
  for (const file of files) {
    const target = join(outRoot, file.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, file.content);
  }
  return files.map((file) => file.path);
}

/** Paths (relative) of outputs whose file under `outRoot` differs from what the spec produces, or is missing. */
export function staleFiles(outRoot: string, files: GeneratedFile[]): string[] {
  return files
    .filter((file) => {
      try {
        return readFileSync(join(outRoot, file.path), "utf8") !== file.content;
      } catch {
        return true;
      }
    })
    .map((file) => file.path);
}
