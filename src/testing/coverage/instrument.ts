import ts from "typescript";

/*
 * Coverage counters put into a script's own source files as the bundler reads them (a `BundleVariant`), in the
 * manner of istanbul: a counter per statement, per function and per branch arm, each an increment of one shared
 * `Uint32Array` the bundle's prelude declares. Counters are placed in the TypeScript source itself, so what they
 * count is already in the author's terms (file, line); nothing is inserted on a line of its own, so every line
 * stays where it was and the bundle's source map, stack traces and error lines still hold.
 *
 * Why counters and not V8's own coverage: V8's precise coverage is reached through the inspector protocol, and
 * isolated-vm documents its inspector as unsafe for untrusted code; counters run inside the isolate like any
 * other script code, under the same limits. The instrumented bundle is a variant: a run without coverage runs
 * the script's bundle as production loads it.
 *
 * Branches counted: `if` (then and else, an absent else included), `? :`, each operand of a chain of `&&`,
 * `||`, `??`, and each clause of a `switch`. A `return` also records its site, so a test can say which line
 * produced a hook's decision (the site of the statement that first returned the decision's object).
 */

/** The counter array and the return-site recorder the instrumented code calls (declared by the prelude). */
const COUNTERS = "__hookbox_cov__";
const RETURN_SITE = "__hookbox_ret__";

export type BranchKind = "if" | "cond-expr" | "binary-expr" | "switch";

export interface CoveredStatement {
  counter: number;
  line: number;
}

export interface CoveredFunction {
  counter: number;
  name: string;
  line: number;
  endLine: number;
}

export interface CoveredBranch {
  kind: BranchKind;
  line: number;
  /** One counter per arm, in source order. */
  arms: { counter: number; line: number }[];
}

/** What the counters of one source file stand for. */
export interface FileCoverageMap {
  /** Absolute path of the file. */
  path: string;
  statements: CoveredStatement[];
  functions: CoveredFunction[];
  branches: CoveredBranch[];
}

/** The counters of one instrumented bundle: where each file's counters are, and how many there are in all. */
export class BundleInstrumentation {
  readonly files: FileCoverageMap[] = [];
  private next = 0;
  /** Return-site counter -> its file and line. */
  private readonly sites = new Map<number, { path: string; line: number }>();

  get counters(): number {
    return this.next;
  }

  /** The file and line of a return site, as the runtime read it back (-1 or unknown: none). */
  site(counter: number): { path: string; line: number } | undefined {
    return this.sites.get(counter);
  }

  /** The file's source with counters in it (same lines). */
  instrumentSource(path: string, text: string): string {
    const map: FileCoverageMap = { path, statements: [], functions: [], branches: [] };
    this.files.push(map);
    const kind = /\.[mc]?jsx?$/i.test(path) ? ts.ScriptKind.JS : /x$/i.test(path) ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true, kind);
    return new SourceRewriter(
      file,
      map,
      () => this.next++,
      (counter, line) => this.sites.set(counter, { path, line }),
    ).rewrite();
  }

  /** esbuild's output with the counters declared at its top (on its first line: no line moves). */
  bundlePrelude(js: string): string {
    const prelude =
      `var ${COUNTERS} = new Uint32Array(${this.next}), ${RETURN_SITE} = (function () {` +
      ` var first = new WeakMap(), state = { counts: ${COUNTERS}, site: -1 }; globalThis.__hookbox_coverage__ = state;` +
      ` return function (site, value) { var origin = site;` +
      ` if (value !== null && (typeof value === "object" || typeof value === "function")) { var known = first.get(value); if (known === undefined) first.set(value, site); else origin = known; }` +
      ` state.site = origin; return value; }; })();`;
    return prelude + js;
  }
}

const count = (counter: number) => `${COUNTERS}[${counter}]++`;

/** Statements a counter is put before: everything that runs, not declarations of types or hoisted functions. */
function isCounted(statement: ts.Statement): boolean {
  if (ts.isBlock(statement) || ts.isEmptyStatement(statement) || ts.isFunctionDeclaration(statement)) return false;
  if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) return false;
  if (ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement) || ts.isExportDeclaration(statement)) return false;
  if (ts.isModuleDeclaration(statement) || ts.isEnumDeclaration(statement)) return false;
  return !isAmbient(statement);
}

function isAmbient(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.DeclareKeyword);
}

/** Nodes whose text is copied as it is: types, and declarations that produce no code. */
function isInert(node: ts.Node): boolean {
  if (ts.isTypeNode(node) || ts.isTypeParameterDeclaration(node) || ts.isDecorator(node)) return true;
  if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isImportDeclaration(node)) return true;
  if (ts.isExportDeclaration(node) || ts.isImportEqualsDeclaration(node) || ts.isModuleDeclaration(node)) return true;
  if (ts.isHeritageClause(node) && node.token === ts.SyntaxKind.ImplementsKeyword) return true;
  return isAmbient(node);
}

function isLogical(node: ts.Node): node is ts.BinaryExpression {
  if (!ts.isBinaryExpression(node)) return false;
  const operator = node.operatorToken.kind;
  return (
    operator === ts.SyntaxKind.AmpersandAmpersandToken ||
    operator === ts.SyntaxKind.BarBarToken ||
    operator === ts.SyntaxKind.QuestionQuestionToken
  );
}

type FunctionLike =
  | ts.FunctionDeclaration
  | ts.FunctionExpression
  | ts.ArrowFunction
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration;

function isFunctionWithBody(node: ts.Node): node is FunctionLike & { body: ts.ConciseBody } {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)) &&
    node.body !== undefined
  );
}

/**
 * Rebuilds a file's text from its syntax tree with counters inserted: each node's text is the original text
 * between its children plus its children's rebuilt text, so every insertion nests where its node is.
 */
class SourceRewriter {
  /** Each counted statement's counter (a return's is its site). */
  private readonly statementCounters = new WeakMap<ts.Node, number>();

  constructor(
    private readonly file: ts.SourceFile,
    private readonly map: FileCoverageMap,
    private readonly allocate: () => number,
    private readonly returnSite: (counter: number, line: number) => void,
  ) {}

  rewrite(): string {
    // The file's leading trivia (a shebang, comments) stays where it is; the statements follow.
    return this.file.text.slice(0, this.file.getStart()) + this.code(this.file);
  }

  private line(position: number): number {
    return this.file.getLineAndCharacterOfPosition(position).line + 1;
  }

  /** The node's text from its first token to its end, instrumented. */
  private code(node: ts.Node): string {
    if (isInert(node)) return this.original(node);
    if (isFunctionWithBody(node)) return this.functionCode(node);
    if (ts.isIfStatement(node)) return this.ifCode(node);
    if (ts.isConditionalExpression(node)) return this.conditionalCode(node);
    if (isLogical(node)) return this.logicalCode(node);
    if (ts.isCaseBlock(node)) return this.caseBlockCode(node);
    if (ts.isReturnStatement(node)) return this.returnCode(node);
    if (ts.isLabeledStatement(node)) return this.childrenCode(node, (child) => this.code(child));
    if (ts.isIterationStatement(node, false))
      return this.childrenCode(node, (child) => (child === node.statement ? this.bodyCode(node.statement, []) : this.code(child)));
    if (ts.isSourceFile(node) || ts.isBlock(node) || ts.isModuleBlock(node) || ts.isCaseClause(node) || ts.isDefaultClause(node))
      return this.listCode(node);
    return this.childrenCode(node, (child) => this.code(child));
  }

  private original(node: ts.Node): string {
    return this.file.text.slice(node.getStart(this.file), node.end);
  }

  /** The node's own text between its children, each child's text made by `child`. */
  private childrenCode(node: ts.Node, child: (child: ts.Node) => string): string {
    const text = this.file.text;
    let cursor = node.getStart(this.file);
    let out = "";
    node.forEachChild((each) => {
      const start = each.getStart(this.file);
      out += text.slice(cursor, start) + child(each);
      cursor = each.end;
    });
    return out + text.slice(cursor, node.end);
  }

  /** A statement list: a counter before each statement that runs (after any directive prologue). */
  /** `first` (a switch clause's arm counter) goes before the first statement, or at the end when there is none. */
  private listCode(node: ts.SourceFile | ts.Block | ts.ModuleBlock | ts.CaseClause | ts.DefaultClause, first = ""): string {
    const statements = new Set<ts.Node>(node.statements);
    const directives = this.directives(node);
    let pending = first;
    const text = this.childrenCode(node, (child) => {
      if (!statements.has(child)) return this.code(child);
      const prefix = pending;
      pending = "";
      if (directives.has(child)) return prefix + this.code(child);
      return prefix + this.counted(child as ts.Statement) + this.code(child);
    });
    return text + pending;
  }

  /** `"use strict"` and its kind at the top of a file or function body: a counter before one would end the prologue. */
  private directives(node: ts.Node): Set<ts.Node> {
    const found = new Set<ts.Node>();
    if (!ts.isSourceFile(node) && !(ts.isBlock(node) && isFunctionWithBody(node.parent))) return found;
    for (const statement of (node as ts.SourceFile | ts.Block).statements) {
      if (!ts.isExpressionStatement(statement) || !ts.isStringLiteral(statement.expression)) break;
      found.add(statement);
    }
    return found;
  }

  /** The counter statement for `statement` (empty when it is not counted). */
  private counted(statement: ts.Statement): string {
    if (!isCounted(statement)) return "";
    const counter = this.allocate();
    const line = this.line(statement.getStart(this.file));
    this.map.statements.push({ counter, line });
    this.statementCounters.set(statement, counter);
    return `${count(counter)};`;
  }

  /**
   * A statement where one statement stands (an if's arm, a loop's body): the given counters (a branch arm's)
   * and its statement counter go first, inside a block made for them when it is not one already.
   */
  private bodyCode(statement: ts.Statement, prefix: number[]): string {
    const counters = prefix.map((counter) => `${count(counter)};`).join("");
    // A block's rebuilt text starts with its "{".
    if (ts.isBlock(statement)) return `{${counters}${this.code(statement).slice(1)}`;
    return `{${counters}${this.counted(statement)}${this.code(statement)}}`;
  }

  private ifCode(node: ts.IfStatement): string {
    const arms = [this.allocate(), this.allocate()];
    const elseLine = node.elseStatement ? this.line(node.elseStatement.getStart(this.file)) : this.line(node.thenStatement.end);
    this.map.branches.push({
      kind: "if",
      line: this.line(node.getStart(this.file)),
      arms: [
        { counter: arms[0]!, line: this.line(node.thenStatement.getStart(this.file)) },
        { counter: arms[1]!, line: elseLine },
      ],
    });
    const text = this.childrenCode(node, (child) => {
      if (child === node.thenStatement) return this.bodyCode(node.thenStatement, [arms[0]!]);
      if (child === node.elseStatement) return this.bodyCode(node.elseStatement, [arms[1]!]);
      return this.code(child);
    });
    return node.elseStatement ? text : `${text} else {${count(arms[1]!)};}`;
  }

  private conditionalCode(node: ts.ConditionalExpression): string {
    const arms = [this.allocate(), this.allocate()];
    this.map.branches.push({
      kind: "cond-expr",
      line: this.line(node.getStart(this.file)),
      arms: [
        { counter: arms[0]!, line: this.line(node.whenTrue.getStart(this.file)) },
        { counter: arms[1]!, line: this.line(node.whenFalse.getStart(this.file)) },
      ],
    });
    return this.childrenCode(node, (child) => {
      if (child === node.whenTrue) return `(${count(arms[0]!)}, ${this.code(child)})`;
      if (child === node.whenFalse) return `(${count(arms[1]!)}, ${this.code(child)})`;
      return this.code(child);
    });
  }

  /** A chain of `&&` / `||` / `??`: one branch, an arm per operand, counted as each is evaluated. */
  private logicalCode(node: ts.BinaryExpression): string {
    const branch: CoveredBranch = { kind: "binary-expr", line: this.line(node.getStart(this.file)), arms: [] };
    this.map.branches.push(branch);
    const chain = (expression: ts.BinaryExpression): string =>
      this.childrenCode(expression, (child) => {
        if (child === expression.operatorToken) return this.original(child);
        if (isLogical(child)) return chain(child);
        const counter = this.allocate();
        branch.arms.push({ counter, line: this.line(child.getStart(this.file)) });
        return `(${count(counter)}, ${this.code(child)})`;
      });
    return chain(node);
  }

  /** Each clause of a switch is an arm, counted when the switch enters it (or falls into it). */
  private caseBlockCode(node: ts.CaseBlock): string {
    const branch: CoveredBranch = { kind: "switch", line: this.line(node.parent.getStart(this.file)), arms: [] };
    this.map.branches.push(branch);
    return this.childrenCode(node, (clause) => {
      const counter = this.allocate();
      branch.arms.push({ counter, line: this.line(clause.getStart(this.file)) });
      return this.listCode(clause as ts.CaseClause | ts.DefaultClause, `${count(counter)};`);
    });
  }

  private returnCode(node: ts.ReturnStatement): string {
    const counter = this.statementCounters.get(node);
    const site = counter ?? this.allocate();
    this.returnSite(site, this.line(node.getStart(this.file)));
    const expression = node.expression;
    if (expression === undefined) {
      const text = this.original(node);
      return `return ${RETURN_SITE}(${site}, void 0)${text.slice("return".length)}`;
    }
    const start = node.getStart(this.file);
    const text = this.file.text;
    return `${text.slice(start, expression.getStart(this.file))}${RETURN_SITE}(${site}, ${this.code(expression)})${text.slice(expression.end, node.end)}`;
  }

  private functionCode(node: FunctionLike & { body: ts.ConciseBody }): string {
    const counter = this.allocate();
    const start = node.getStart(this.file);
    this.map.functions.push({ counter, name: functionName(node), line: this.line(start), endLine: this.line(node.end) });
    const body = node.body;
    return this.childrenCode(node, (child) => {
      if (child !== body) return this.code(child);
      if (ts.isBlock(body)) {
        const directives = this.directives(body);
        const inner = this.code(body);
        if (directives.size === 0) return `{${count(counter)};${inner.slice(1)}`;
        // After the prologue: the directives' rebuilt text is their original text.
        const last = [...directives].at(-1)!;
        const cut = last.end - body.getStart(this.file);
        return `${inner.slice(0, cut)}${count(counter)};${inner.slice(cut)}`;
      }
      // A concise arrow body: the function and its expression (a statement of its own) are counted before it.
      const statement = this.allocate();
      this.map.statements.push({ counter: statement, line: this.line(body.getStart(this.file)) });
      return `(${count(counter)}, ${count(statement)}, ${this.code(body)})`;
    });
  }
}

function functionName(node: FunctionLike): string {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const own = node.name;
  if (own !== undefined && (ts.isIdentifier(own) || ts.isStringLiteral(own) || ts.isPrivateIdentifier(own))) return own.text;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (ts.isPropertyAssignment(parent) && (ts.isIdentifier(parent.name) || ts.isStringLiteral(parent.name))) return parent.name.text;
  return "(anonymous)";
}
