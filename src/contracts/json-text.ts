/*
 * JSON read from a file a person wrote (a serve config, a scripted model): a syntax error names the line and
 * column and what was expected there, and never echoes the file's text (V8's own messages quote it, and a
 * config may hold secrets). JSON.parse does the parsing; on failure, a small scanner finds where and why.
 */

/** Parses `text`, or throws a SyntaxError whose message is `line L column C: <what was expected>`. */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    const { offset, problem } = firstSyntaxError(text);
    const { line, column } = lineAndColumn(text, offset);
    throw new SyntaxError(`line ${line} column ${column}: ${problem}`);
  }
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 };
}

class Scan {
  offset = 0;
  constructor(readonly text: string) {}

  fail(problem: string, offset = this.offset): never {
    throw { offset, problem };
  }

  space(): void {
    while (/[ \t\n\r]/.test(this.text[this.offset] ?? "")) this.offset++;
  }

  value(): void {
    this.space();
    const char = this.text[this.offset];
    if (char === undefined) this.fail("unexpected end of the file: expected a value");
    if (char === "{") return this.object();
    if (char === "[") return this.array();
    if (char === '"') return this.string();
    if (char === "-" || (char >= "0" && char <= "9")) return this.number();
    for (const literal of ["true", "false", "null"]) {
      if (this.text.startsWith(literal, this.offset)) {
        this.offset += literal.length;
        return;
      }
    }
    this.fail(`unexpected ${describe(char)}: expected a value (object, array, string, number, true, false or null)`);
  }

  private object(): void {
    this.offset++;
    this.space();
    if (this.text[this.offset] === "}") return void this.offset++;
    for (;;) {
      this.space();
      if (this.text[this.offset] !== '"') this.fail(`${this.found()}: expected a property name in double quotes`);
      this.string();
      this.space();
      if (this.text[this.offset] !== ":") this.fail(`${this.found()}: expected ':' after the property name`);
      this.offset++;
      this.value();
      this.space();
      const next = this.text[this.offset];
      if (next === "}") return void this.offset++;
      if (next !== ",") this.fail(`${this.found()}: expected ',' or '}' after a property value`);
      const comma = this.offset++;
      this.space();
      if (this.text[this.offset] === "}") this.fail("a trailing comma: JSON allows no ',' before '}'", comma);
    }
  }

  private array(): void {
    this.offset++;
    this.space();
    if (this.text[this.offset] === "]") return void this.offset++;
    for (;;) {
      this.value();
      this.space();
      const next = this.text[this.offset];
      if (next === "]") return void this.offset++;
      if (next !== ",") this.fail(`${this.found()}: expected ',' or ']' after an array element`);
      const comma = this.offset++;
      this.space();
      if (this.text[this.offset] === "]") this.fail("a trailing comma: JSON allows no ',' before ']'", comma);
    }
  }

  private string(): void {
    this.offset++;
    for (;;) {
      const char = this.text[this.offset];
      if (char === undefined) this.fail("unexpected end of the file inside a string");
      if (char === '"') return void this.offset++;
      if (char < " ") this.fail("a control character (a raw line break or tab) inside a string: escape it");
      if (char === "\\") {
        const escape = this.text[this.offset + 1] ?? "";
        if (escape === "u" && /^[0-9a-fA-F]{4}$/.test(this.text.slice(this.offset + 2, this.offset + 6))) this.offset += 6;
        else if ('"\\/bfnrt'.includes(escape) && escape !== "") this.offset += 2;
        else this.fail("a bad escape in a string");
      } else this.offset++;
    }
  }

  private number(): void {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.offset));
    if (!match) this.fail("a malformed number");
    this.offset += match[0].length;
  }

  private found(): string {
    const char = this.text[this.offset];
    return char === undefined ? "unexpected end of the file" : `unexpected ${describe(char)}`;
  }
}

function describe(char: string): string {
  return /[\w'",:{}[\]]/.test(char) ? `'${char}'` : `character U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Where the first syntax error is, and what the scanner expected there. */
function firstSyntaxError(text: string): { offset: number; problem: string } {
  if (text.charCodeAt(0) === 0xfeff)
    return { offset: 0, problem: "a byte-order mark (U+FEFF) at the start: save the file as UTF-8 without one" };
  const scan = new Scan(text);
  try {
    scan.value();
    scan.space();
    if (scan.offset < scan.text.length) scan.fail(`unexpected ${describe(scan.text[scan.offset]!)} after the end of the JSON value`);
  } catch (found) {
    if (found && typeof found === "object" && "offset" in found) return found as { offset: number; problem: string };
    throw found;
  }
  // JSON.parse refused what the scanner accepts (should not happen): report the end.
  return { offset: scan.offset, problem: "not valid JSON" };
}
