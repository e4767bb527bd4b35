import ts from "typescript";

/*
 * Why this exists: TypeScript checks an unannotated function's return statements only as a whole, when the
 * function is assigned to the hook's type. The error then lands on the hook's first line, and an object literal
 * with an extra field passes (its freshness is lost). `hookbox check` therefore gives every unannotated hook the
 * return type it would have if the author had written it, so each `return` is checked where it is written,
 * exactly like zod checks it at run time. Positions are mapped back to the author's text.
 */

const HOOK_RETURN_TYPES: Record<string, string> = {
  beforeToolCall: "BeforeToolCallReturn",
  afterToolCall: "AfterToolCallReturn",
  onToolError: "OnToolErrorReturn",
  beforeRun: "BeforeRunReturn",
  beforeFinish: "BeforeFinishReturn",
};

export interface Insertion {
  position: number;
  text: string;
}

/** Return-type annotations to insert into `source`, for each hook function contextually typed by hookbox.d.ts. */
export function hookAnnotations(checker: ts.TypeChecker, source: ts.SourceFile, hookboxDts: string): Insertion[] {
  if (!/\.(ts|tsx|mts|cts)$/.test(source.fileName) || source.isDeclarationFile) return [];
  const insertions: Insertion[] = [];
  const visit = (node: ts.Node): void => {
    const target = hookFunction(node);
    if (target && isHookboxHook(checker, target.property, hookboxDts)) {
      const { fn, name } = target;
      const isAsync = fn.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.AsyncKeyword) ?? false;
      const returns = `import("hookbox").${HOOK_RETURN_TYPES[name]} | void`;
      const annotation = `: ${isAsync ? `Promise<${returns}>` : `${returns} | Promise<${returns}>`}`;
      const closeParen = closeParenPosition(source, fn);
      if (closeParen !== undefined) insertions.push({ position: closeParen, text: annotation });
      else if (ts.isArrowFunction(fn) && fn.parameters.length === 1) {
        // `p => ...` has no parentheses to annotate after: add them.
        const parameter = fn.parameters[0]!;
        insertions.push({ position: parameter.getStart(source), text: "(" }, { position: parameter.end, text: `)${annotation}` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return insertions;
}

type HookFunction = ts.MethodDeclaration | ts.FunctionExpression | ts.ArrowFunction;

/** `beforeToolCall(p) {...}`, `beforeToolCall: function (p) {...}` or `beforeToolCall: (p) => ...`, unannotated. */
function hookFunction(node: ts.Node): { fn: HookFunction; name: string; property: ts.ObjectLiteralElementLike } | undefined {
  let fn: ts.Node | undefined;
  if (ts.isMethodDeclaration(node)) fn = node;
  else if (ts.isPropertyAssignment(node)) fn = skipParens(node.initializer);
  else return undefined;
  if (!fn || !(ts.isMethodDeclaration(fn) || ts.isFunctionExpression(fn) || ts.isArrowFunction(fn))) return undefined;
  if (fn.type || fn.asteriskToken) return undefined;
  const nameNode = (node as ts.MethodDeclaration | ts.PropertyAssignment).name;
  const name = ts.isIdentifier(nameNode) || ts.isStringLiteral(nameNode) ? nameNode.text : undefined;
  if (!name || !Object.hasOwn(HOOK_RETURN_TYPES, name) || !ts.isObjectLiteralExpression(node.parent)) return undefined;
  return { fn, name, property: node as ts.ObjectLiteralElementLike };
}

function skipParens(expression: ts.Expression): ts.Expression {
  return ts.isParenthesizedExpression(expression) ? skipParens(expression.expression) : expression;
}

/** True when the object literal holding `property` is contextually typed by hookbox.d.ts's Hooks. */
function isHookboxHook(checker: ts.TypeChecker, property: ts.ObjectLiteralElementLike, hookboxDts: string): boolean {
  const contextual = checker.getContextualType(property.parent as ts.ObjectLiteralExpression);
  const name = property.name && (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name)) ? property.name.text : "";
  const symbol = contextual?.getNonNullableType().getProperty(name);
  return symbol?.declarations?.some((declaration) => sameFile(declaration.getSourceFile().fileName, hookboxDts)) ?? false;
}

function sameFile(a: string, b: string): boolean {
  return a.replace(/\\/g, "/") === b.replace(/\\/g, "/");
}

/** The position just after the `)` closing the parameter list (an arrow function without parentheses has none). */
function closeParenPosition(source: ts.SourceFile, fn: HookFunction): number | undefined {
  const text = source.text;
  let position = fn.parameters.end;
  while (position < fn.end && /\s/.test(text[position]!)) position++;
  return text[position] === ")" ? position + 1 : undefined;
}

export function applyInsertions(text: string, insertions: Insertion[]): string {
  let out = "";
  let from = 0;
  for (const insertion of [...insertions].sort((a, b) => a.position - b.position)) {
    out += text.slice(from, insertion.position) + insertion.text;
    from = insertion.position;
  }
  return out + text.slice(from);
}

/** Maps a position in the annotated text back to the author's text. */
export function originalPosition(position: number, insertions: Insertion[]): number {
  let shift = 0;
  for (const insertion of [...insertions].sort((a, b) => a.position - b.position)) {
    const start = insertion.position + shift;
    if (position < start) break;
    if (position < start + insertion.text.length) return insertion.position;
    shift += insertion.text.length;
  }
  return position - shift;
}
