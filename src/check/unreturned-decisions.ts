import ts from "typescript";

/*
 * A hook that builds a decision and forgets to return it (`const decision = { action: "deny", ... };` and no
 * `return decision`) type-checks, since returning nothing is "no opinion", and then quietly allows what it meant to
 * stop. `hookbox check` warns at the decision it built.
 */

const HOOKS = new Set(["beforeToolCall", "afterToolCall", "onToolError", "beforeRun", "beforeFinish"]);

export interface UnreturnedDecision {
  line: number;
  column: number;
  message: string;
}

export function unreturnedDecisions(source: ts.SourceFile): UnreturnedDecision[] {
  const found: UnreturnedDecision[] = [];
  const at = (node: ts.Node, message: string) => {
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push({ line: line + 1, column: character + 1, message });
  };
  const visit = (node: ts.Node): void => {
    const hook = hookBody(node);
    if (hook) {
      const built = new Map<string, ts.Node>();
      const returned = new Set<string>();
      const inHook = (inner: ts.Node): void => {
        if (inner !== hook.body && ts.isFunctionLike(inner)) return; // a nested function's returns are its own
        if (ts.isVariableDeclaration(inner) && ts.isIdentifier(inner.name) && inner.initializer && isDecision(inner.initializer))
          built.set(inner.name.text, inner);
        if (ts.isExpressionStatement(inner) && isDecision(inner.expression))
          at(inner, `${hook.name} builds a decision here and does not return it: write \`return { action: ... }\``);
        if (ts.isReturnStatement(inner) && inner.expression) collectIdentifiers(inner.expression, returned);
        ts.forEachChild(inner, inHook);
      };
      inHook(hook.body);
      for (const [name, declaration] of built) {
        if (!returned.has(name))
          at(declaration, `${hook.name} builds a decision (${name}) and never returns it, so the hook has no opinion: \`return ${name};\``);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `beforeToolCall(p) {...}`, `beforeToolCall: function (p) {...}` or `beforeToolCall: (p) => {...}` with a block body. */
function hookBody(node: ts.Node): { name: string; body: ts.Block } | undefined {
  if (!ts.isMethodDeclaration(node) && !ts.isPropertyAssignment(node)) return undefined;
  const name = ts.isIdentifier(node.name) || ts.isStringLiteral(node.name) ? node.name.text : undefined;
  if (!name || !HOOKS.has(name)) return undefined;
  const fn = ts.isMethodDeclaration(node) ? node : node.initializer;
  if (!(ts.isMethodDeclaration(fn) || ts.isFunctionExpression(fn) || ts.isArrowFunction(fn))) return undefined;
  return fn.body && ts.isBlock(fn.body) ? { name, body: fn.body } : undefined;
}

/** An object literal with an `action` property (parentheses and `as`/`satisfies` looked through). */
function isDecision(expression: ts.Expression): boolean {
  let inner = expression;
  while (ts.isParenthesizedExpression(inner) || ts.isAsExpression(inner) || ts.isSatisfiesExpression(inner)) inner = inner.expression;
  return (
    ts.isObjectLiteralExpression(inner) &&
    inner.properties.some((property) => property.name !== undefined && ts.isIdentifier(property.name) && property.name.text === "action")
  );
}

function collectIdentifiers(node: ts.Node, into: Set<string>): void {
  if (ts.isIdentifier(node)) into.add(node.text);
  ts.forEachChild(node, (child) => collectIdentifiers(child, into));
}
