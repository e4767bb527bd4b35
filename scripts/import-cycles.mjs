#!/usr/bin/env node
// Fails when the project's own modules import each other in a cycle. Cycles make load order fragile (a
// module can see another's bindings before they are initialised) and blur which module owns a concept.
// `import type` edges count too: a type cycle is the same tangle of ownership, only erased at runtime.
// Imports are read with the TypeScript scanner (ts.preProcessFile), and only relative specifiers are
// followed, so node_modules never enters the graph.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

// The project root, or the directory given as the first argument (the test runs it on a fixture).
const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), ".."));
const scannedDirs = ["src", "runtime", "codegen"];
const sourceExtensions = [".ts", ".tsx", ".mts", ".js", ".mjs"];

// Cycles allowed for now, each as its sorted member list joined by " | ". Every entry says why; a cycle that
// grows or changes members is no longer the allowed one and fails.
const allowedCycles = new Set([]);

function listSourceFiles(dir) {
  if (!existsSync(dir)) return [];
  const files = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...listSourceFiles(path));
    else if (sourceExtensions.some((ext) => entry.endsWith(ext)) && !entry.endsWith(".d.ts")) files.push(path);
  }
  return files;
}

// Resolves a relative specifier the way the project writes them: ESM `.js` suffixes that name `.ts` files.
function resolveImport(fromFile, specifier) {
  const base = resolve(dirname(fromFile), specifier);
  const stem = base.replace(/\.(m?js|tsx?)$/, "");
  const candidates = [base, ...sourceExtensions.map((ext) => stem + ext), ...sourceExtensions.map((ext) => join(base, "index" + ext))];
  return candidates.find((path) => existsSync(path) && statSync(path).isFile());
}

function importGraph(files) {
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = new Set();
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const target = resolveImport(file, fileName);
      if (target && known.has(target) && target !== file) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

// Tarjan's strongly connected components: every component with more than one module is a cycle.
function stronglyConnected(graph) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (node) => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), index.get(next)));
    }
    if (low.get(node) === index.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) components.push(component);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}

const files = scannedDirs.flatMap((dir) => listSourceFiles(join(root, dir)));
const graph = importGraph(files);
const cycles = stronglyConnected(graph).map((component) => component.map((file) => relative(root, file).split("\\").join("/")).sort());
const unexpected = cycles.filter((members) => !allowedCycles.has(members.join(" | ")));
if (unexpected.length > 0) {
  console.error(`import-cycles: ${unexpected.length} import cycle(s) among ${files.length} modules:`);
  for (const members of unexpected) console.error(`  - ${members.join(" | ")}`);
  process.exit(1);
}
console.log(`import-cycles: no cycles among ${files.length} modules`);
