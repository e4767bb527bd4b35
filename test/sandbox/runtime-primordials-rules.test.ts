import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/*
 * The rules of runtime/primordials.ts, checked on the sources and on the bundle the workers evaluate
 * (dist/runtime.js): runtime code runs in a context a script may have tampered with, so it uses no syntax that
 * consults something a script can replace (for-of, array destructuring and spread read Symbol.iterator;
 * async/await reads `then`) and reaches built-ins only through what primordials.ts captured before any script
 * ran. Code that runs only while the runtime is evaluated (module top level, before any script) may use the
 * globals themselves.
 */
const root = join(import.meta.dirname, "../..");
const runtimeDir = join(root, "runtime");

/** Globals a script can replace, and whose members it can replace. */
const REPLACEABLE = new Set([
  "Object",
  "Array",
  "JSON",
  "Number",
  "String",
  "Boolean",
  "Symbol",
  "Reflect",
  "Promise",
  "Math",
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "WeakMap",
  "WeakSet",
  "Map",
  "Set",
  "RegExp",
  "Proxy",
  "Function",
  "globalThis",
  "ArrayBuffer",
]);

/**
 * Functions that run only while the runtime is evaluated, before any script: bootstrap.ts's top level calls
 * refuseResizableArrayBuffers, constants.gen.ts's builds its keys with key().
 */
const EVALUATION_ONLY = new Set(["refuseResizableArrayBuffers", "key"]);

interface Violation {
  where: string;
  what: string;
}

function lineOf(source: ts.SourceFile, node: ts.Node): string {
  return `${source.fileName}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
}

/** The violations in one file; `checkGlobals`: also flag replaceable globals used inside functions. */
function violations(fileName: string, text: string, options: { checkGlobals: boolean; allowedFunctions?: Set<string> }): Violation[] {
  const source = ts.createSourceFile(
    fileName,
    text,
    ts.ScriptTarget.ES2022,
    true,
    fileName.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS,
  );
  const found: Violation[] = [];
  const flag = (node: ts.Node, what: string) => found.push({ where: lineOf(source, node), what });
  const visit = (node: ts.Node, insideFunction: boolean, allowed: boolean): void => {
    if (!allowed) {
      if (ts.isForOfStatement(node)) flag(node, "for-of");
      if (ts.isArrayBindingPattern(node)) flag(node, "array destructuring");
      if (ts.isArrayLiteralExpression(node.parent ?? node) && ts.isSpreadElement(node)) flag(node, "spread in an array literal");
      if ((ts.isCallExpression(node.parent ?? node) || ts.isNewExpression(node.parent ?? node)) && ts.isSpreadElement(node))
        flag(node, "spread in a call");
      if (ts.isArrayLiteralExpression(node) && ts.isBinaryExpression(node.parent) && node.parent.left === node)
        flag(node, "array destructuring assignment");
      if (ts.isAwaitExpression(node)) flag(node, "await");
      if (node.kind === ts.SyntaxKind.AsyncKeyword) flag(node, "async function");
      if (options.checkGlobals && insideFunction && ts.isIdentifier(node) && REPLACEABLE.has(node.text) && isValueReference(node))
        flag(node, `the global ${node.text} (use what primordials.ts captured)`);
    }
    const isFunction = ts.isFunctionLike(node) && !ts.isTypeNode(node) && !ts.isMethodSignature(node);
    const name = functionName(node, isFunction);
    const nowAllowed = allowed || (name !== undefined && (EVALUATION_ONLY.has(name) || (options.allowedFunctions?.has(name) ?? false)));
    ts.forEachChild(node, (child) => visit(child, insideFunction || isFunction, nowAllowed));
  };
  visit(source, false, false);
  return found;
}

/** A function's name: its own, or the variable's it initializes (`var __copyProps = (...) => ...`). */
function functionName(node: ts.Node, isFunction: boolean): string | undefined {
  if (!isFunction) return undefined;
  if ("name" in node && node.name !== undefined && ts.isIdentifier(node.name as ts.Node)) return (node.name as ts.Identifier).text;
  const parent = node.parent;
  if (parent !== undefined && ts.isVariableDeclaration(parent) && parent.initializer === node && ts.isIdentifier(parent.name))
    return parent.name.text;
  return undefined;
}

/** An identifier that reads the global at run time (not a type, a property name or a declaration's own name). */
function isValueReference(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.name === node) return false;
  if (ts.isPropertyAssignment(parent) && parent.name === node) return false;
  if ((ts.isMethodDeclaration(parent) || ts.isPropertyDeclaration(parent) || ts.isPropertySignature(parent)) && parent.name === node)
    return false;
  if (ts.isTypeReferenceNode(parent) || ts.isExpressionWithTypeArguments(parent) || ts.isQualifiedName(parent)) return false;
  if (ts.isImportSpecifier(parent) || ts.isTypeQueryNode(parent)) return false;
  for (let at: ts.Node | undefined = parent; at !== undefined; at = at.parent) if (ts.isTypeNode(at)) return false;
  return true;
}

describe("runtime code follows primordials.ts's rules", () => {
  const files = readdirSync(runtimeDir).filter((name) => name.endsWith(".ts") && name !== "primordials.ts");

  it("the runtime's sources use no iterator or `then`-reading syntax, and no replaceable global inside a function", () => {
    expect(files.length).toBeGreaterThan(10);
    const found = files.flatMap((name) =>
      violations(`runtime/${name}`, readFileSync(join(runtimeDir, name), "utf8"), { checkGlobals: true }),
    );
    expect(found).toEqual([]);
  });

  it("primordials.ts, which captures the globals, uses none of that syntax either", () => {
    expect(violations("runtime/primordials.ts", readFileSync(join(runtimeDir, "primordials.ts"), "utf8"), { checkGlobals: false })).toEqual(
      [],
    );
  });

  it("the bundle the workers evaluate (dist/runtime.js) keeps no such syntax outside esbuild's module wrapper", () => {
    const bundle = readFileSync(join(root, "dist/runtime.js"), "utf8");
    // __copyProps and __toCommonJS run once, when the runtime is evaluated, before any script code.
    const found = violations("dist/runtime.js", bundle, { checkGlobals: false, allowedFunctions: new Set(["__copyProps"]) });
    expect(found).toEqual([]);
  });

  it("catches what it is for", () => {
    const sample = `export function f(list, value) {
      for (const item of list) {}
      const [first] = list;
      g(...list);
      const copy = [...list];
      return Object.keys(value);
    }
    async function h() { await 1; }`;
    expect(violations("sample.ts", sample, { checkGlobals: true }).map((violation) => violation.what)).toEqual([
      "for-of",
      "array destructuring",
      "spread in a call",
      "spread in an array literal",
      "the global Object (use what primordials.ts captured)",
      "async function",
      "await",
    ]);
  });
});
