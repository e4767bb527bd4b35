// The published declarations: one file, dist/index.d.ts, rolled up by API Extractor from the per-module
// declarations tsc writes to dist/types/ (which are not published). Every type the file mentions is one that
// src/index.ts exports by name, so a host can name everything it sees and the file says nothing about internals:
// a public declaration that names an unexported type fails the build here (API Extractor's "forgotten export").
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Rolls dist/types/ up into dist/index.d.ts; skipped when dist/types/, the value exports and this script are unchanged
 * since the last rollup. `valueExports`: the names dist/index.js exports at run time.
 */
export function rollUpDeclarations(root, { valueExports }) {
  const typesDir = join(root, "dist/types");
  const output = join(root, "dist/index.d.ts");
  const stamp = join(root, "dist/.declarations-hash");
  const hash = treeHash(typesDir, valueExports);
  if (existsSync(output) && existsSync(stamp) && readFileSync(stamp, "utf8") === hash) return;

  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: join(typesDir, "index.d.ts"),
      // The emitted declarations only (not the sources): what a consumer's compiler reads.
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            strict: true,
            types: ["node"],
            // src/index.ts's first import (bin/node-support.js, the Node check) is a side effect with no types to read.
            noUncheckedSideEffectImports: false,
          },
          files: [join(typesDir, "index.d.ts")],
        },
      },
      newlineKind: "lf",
      apiReport: { enabled: false },
      docModel: { enabled: false },
      tsdocMetadata: { enabled: false },
      // The public trim: a member marked @internal (one a host never calls, such as Session's constructor) is left out.
      dtsRollup: { enabled: true, untrimmedFilePath: "", publicTrimmedFilePath: output },
      messages: {
        compilerMessageReporting: { default: { logLevel: "error" } },
        extractorMessageReporting: {
          default: { logLevel: "error" },
          // hookbox marks no release stages (@beta, @alpha): everything src/index.ts exports is public.
          "ae-missing-release-tag": { logLevel: "none" },
          // @internal marks members, not exported names, so they need no leading underscore.
          "ae-internal-missing-underscore": { logLevel: "none" },
        },
        tsdocMessageReporting: { default: { logLevel: "none" } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: join(root, "package.json"),
  });
  const problems = [];
  const result = Extractor.invoke(config, {
    localBuild: true,
    messageCallback(message) {
      message.handled = true;
      if (message.logLevel !== "error") return;
      problems.push(describe(root, message));
    },
  });
  if (!result.succeeded || problems.length) {
    throw new Error(`the published declarations (dist/index.d.ts) are not the public surface:\n${problems.join("\n")}`);
  }
  writeFileSync(output, publicText(readFileSync(output, "utf8"), new Set(valueExports)));
  writeFileSync(stamp, hash);
}

/**
 * Two repairs to API Extractor's file. It writes every exported name as `export declare class|function ...`, so a
 * class src/index.ts exports as a type only (Session, TypedKey) would look constructible and fail at run time: such
 * names are declared without `export` and listed in one `export type { ... }`. And its notes on what the public trim
 * left out ("Excluded from this release type: X") would name internals: they go.
 */
function publicText(text, valueExports) {
  const typeOnly = [];
  const declarations = text.replace(/^export declare (class|function|const|let|enum|namespace) (\w+)/gm, (line, kind, name) => {
    if (valueExports.has(name)) return line;
    if (!typeOnly.includes(name)) typeOnly.push(name);
    return `declare ${kind} ${name}`;
  });
  const trimmed = declarations.replace(/^[ \t]*\/\* Excluded from this release type: \w+ \*\/\n(\n(?=\n))?/gm, "");
  if (!typeOnly.length) return trimmed;
  return trimmed.replace(/^export \{ \}\s*$/m, `export type { ${typeOnly.sort().join(", ")} };\n\nexport { }\n`);
}

function describe(root, message) {
  const where = message.sourceFilePath
    ? `${relative(root, message.sourceFilePath)
        .replace(/^dist\/types\//, "src/")
        .replace(/\.d\.ts$/, ".ts")}`
    : "dist/types";
  if (message.messageId === "ae-forgotten-export") {
    const name = /"([^"]+)"/.exec(message.text)?.[1] ?? message.text;
    return (
      `  ${where}: a public declaration names ${name}, which src/index.ts does not export. Export it from ` +
      `src/index.ts if a host uses it (and say so in docs/library.md); otherwise keep it out of the public types.`
    );
  }
  return `  ${where}: ${message.messageId}: ${message.text}`;
}

function treeHash(dir, valueExports) {
  // This script's own text too: a change to the rollup's settings or repairs makes a new file.
  const hash = createHash("sha256")
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(JSON.stringify([...valueExports].sort()));
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".d.ts")) hash.update(relative(dir, path)).update("\0").update(readFileSync(path)).update("\0");
    }
  };
  walk(dir);
  return hash.digest("hex");
}
