import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { hookboxBin, repoRoot } from "../helpers/cli.js";

/*
 * Every fenced code block in README.md and docs/ is what a reader copies, so each one is checked:
 * - `ts` blocks are whole files. One that calls `defineScript` is a script: `hookbox check` must pass it. Any other
 *   is a host program importing the library: `tsc` (strict, skipLibCheck false, the built declarations) must pass
 *   it. A line ending in `// compile error` must get an error on that line, and only such lines may get one.
 * - `sh` blocks parse (`bash -n`); every hookbox command in them is `npx hookbox` (installed) or
 *   `node bin/hookbox.js` (this repository), names a command, and uses only flags that command's `--help` lists;
 *   `npm run NAME` names a script of package.json.
 * - `json` blocks parse.
 * - Blocks without a language (or `text`) are diagrams and prose, and are not checked. Any other language is a
 *   failure here, so a new kind of block gets a check before it gets into the docs.
 */

interface Block {
  doc: string;
  /** The line of the opening fence. */
  line: number;
  lang: string;
  text: string;
}

const docs = ["README.md", ...readdirSync(join(repoRoot, "docs")).map((file) => `docs/${file}`)].filter((file) => file.endsWith(".md"));
const CHECKED = ["ts", "sh", "json"];
const UNCHECKED = ["", "text"];

function blocksOf(doc: string): Block[] {
  const blocks: Block[] = [];
  let open: { line: number; lang: string; lines: string[]; fence: string } | undefined;
  readFileSync(join(repoRoot, doc), "utf8")
    .split("\n")
    .forEach((text, index) => {
      const fence = /^(\s*)(```+)\s*([\w-]*)\s*$/.exec(text);
      if (!open) {
        if (fence) open = { line: index + 1, lang: fence[3]!, lines: [], fence: fence[2]! };
      } else if (fence && fence[2] === open.fence && !fence[3]) {
        blocks.push({ doc, line: open.line, lang: open.lang, text: open.lines.join("\n") });
        open = undefined;
      } else open.lines.push(text);
    });
  if (open) throw new Error(`${doc}:${open.line}: a code block is never closed`);
  return blocks;
}

const blocks = docs.flatMap(blocksOf);
const where = (block: Block) => `${block.doc}:${block.line}`;
const ofLang = (lang: string) => blocks.filter((block) => block.lang === lang);
const isScript = (block: Block) => /\bdefineScript\s*\(/.test(block.text);

/** The lines of a block marked `// compile error`, 1-based within the block. */
const expectedErrorLines = (block: Block) =>
  block.text
    .split("\n")
    .flatMap((text, index) => (/\/\/ compile error\b/.test(text) ? [index + 1] : []))
    .sort((a, b) => a - b);

/** `file(line,col): error` (tsc) and `file:line:col - error` (hookbox check), per file. */
function errorLines(output: string, fileNames: string[]): Map<string, { line: number; text: string }[]> {
  const found = new Map<string, { line: number; text: string }[]>(fileNames.map((name) => [name, []]));
  for (const text of output.split("\n")) {
    const match = /([\w./-]+\.ts)(?:\((\d+),\d+\)|:(\d+):\d+)\s*[-:]\s*error/.exec(text);
    if (!match) continue;
    const name = fileNames.find((file) => match[1]!.endsWith(file));
    if (name) found.get(name)!.push({ line: Number(match[2] ?? match[3]), text });
  }
  return found;
}

/** Lines of a shell block as commands: continuations joined, comments dropped, split at `&&`, `||`, `;`, `|`. */
function shellCommands(text: string): string[][] {
  return text
    .replace(/\\\n/g, " ")
    .split("\n")
    .flatMap((line) => splitCommands(words(line)));
}

function words(line: string): string[] {
  const out: string[] = [];
  let current: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (char === "#" && current === undefined) break;
    if (/\s/.test(char)) {
      if (current !== undefined) out.push(current);
      current = undefined;
    } else if (char === "'" || char === '"') {
      const end = line.indexOf(char, i + 1);
      current = (current ?? "") + line.slice(i + 1, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end;
    } else if (char === "$" && line[i + 1] === "(") {
      let depth = 0;
      let j = i + 1;
      for (; j < line.length; j++) {
        if (line[j] === "(") depth++;
        else if (line[j] === ")" && --depth === 0) break;
      }
      current = (current ?? "") + line.slice(i, j + 1);
      i = j;
    } else if ("&|;".includes(char)) {
      if (current !== undefined) out.push(current);
      current = undefined;
      out.push(line[i + 1] === char ? char + char : char);
      if (line[i + 1] === char) i++;
    } else current = (current ?? "") + char;
  }
  if (current !== undefined) out.push(current);
  return out;
}

function splitCommands(tokens: string[]): string[][] {
  const commands: string[][] = [[]];
  for (const token of tokens) {
    if (["&&", "||", ";", "|", "&"].includes(token)) commands.push([]);
    else commands.at(-1)!.push(token);
  }
  return commands.filter((command) => command.length > 0);
}

const helpCache = new Map<string, string>();
function helpOf(command: string): string {
  if (!helpCache.has(command)) {
    const r = spawnSync(process.execPath, [hookboxBin, command, "--help"], { cwd: repoRoot, encoding: "utf8", timeout: 30_000 });
    helpCache.set(command, r.status === 0 ? r.stdout : "");
  }
  return helpCache.get(command)!;
}

/** What is wrong with one shell command, as a reader would run it; [] when nothing. */
function shellProblems(command: string[]): string[] {
  const [first, ...rest] = command;
  if (first === "hookbox")
    return [`"${command.join(" ")}": a bare hookbox; write npx hookbox (installed) or node bin/hookbox.js (this repository)`];
  let args: string[] | undefined;
  if (first === "npx" && rest[0] === "hookbox") args = rest.slice(1);
  if (first === "node" && rest[0] === "bin/hookbox.js") args = rest.slice(1);
  if (first === "npm" && rest[0] === "run") {
    const name = rest.find((arg, index) => index > 0 && !arg.startsWith("-"));
    const scripts = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).scripts as Record<string, string>;
    return name && Object.hasOwn(scripts, name) ? [] : [`"${command.join(" ")}": package.json has no script ${name}`];
  }
  if (!args) return [];
  const [name, ...flags] = args;
  if (!name || name.startsWith("-")) return [];
  const help = helpOf(name);
  if (!help) return [`"${command.join(" ")}": ${name} is not a hookbox command with --help`];
  return flags
    .filter((flag) => flag.startsWith("--"))
    .map((flag) => flag.split("=")[0]!.replace(/[^\w-].*$/, ""))
    .filter((flag) => !new RegExp(`(^|[\\s\\[|(])${flag}(?![\\w-])`, "m").test(help))
    .map((flag) => `"${command.join(" ")}": ${flag} is not in "hookbox ${name} --help"`);
}

describe("code blocks in README.md and docs/", () => {
  it("are of a kind this test checks (ts, sh, json) or unchecked text (no language)", () => {
    expect(blocks.length).toBeGreaterThan(15);
    const unknown = blocks
      .filter((block) => ![...CHECKED, ...UNCHECKED].includes(block.lang))
      .map((block) => `${where(block)} ${block.lang}`);
    expect(unknown).toEqual([]);
    for (const lang of CHECKED) expect(ofLang(lang).length, lang).toBeGreaterThan(0);
  });

  it("json blocks parse", () => {
    const broken = ofLang("json").flatMap((block) => {
      try {
        JSON.parse(block.text);
        return [];
      } catch (error) {
        return [`${where(block)}: ${(error as Error).message}`];
      }
    });
    expect(broken).toEqual([]);
  });

  it("sh blocks parse, and their hookbox and npm commands exist with the flags they use", () => {
    const problems: string[] = [];
    for (const block of ofLang("sh")) {
      const parsed = spawnSync("bash", ["-n"], { input: block.text, encoding: "utf8" });
      if (parsed.status !== 0) problems.push(`${where(block)}: bash -n: ${parsed.stderr.trim()}`);
      for (const command of shellCommands(block.text)) problems.push(...shellProblems(command).map((p) => `${where(block)}: ${p}`));
    }
    expect(problems).toEqual([]);
  });

  describe("ts blocks", () => {
    // Inside the repository, so "hookbox" resolves to this package itself (its exports) as in a consumer.
    const dir = join(repoRoot, ".cache/doc-blocks");
    const fileOf = (block: Block) => `${block.doc.replace(/[/.]/g, "_")}_${block.line}.ts`;
    const scripts = ofLang("ts").filter(isScript);
    const hosts = ofLang("ts").filter((block) => !isScript(block));

    beforeAll(() => {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      for (const block of ofLang("ts")) writeFileSync(join(dir, fileOf(block)), `${block.text}\n`);
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            target: "ES2023",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ["node"],
          },
          files: hosts.map(fileOf),
        }),
      );
    });

    /** Each block's errors fall exactly on its `// compile error` lines. */
    function expectOnlyMarkedErrors(checked: Block[], output: string) {
      const found = errorLines(output, checked.map(fileOf));
      const report = checked.map((block) => {
        const lines = found.get(fileOf(block))!;
        const marked = expectedErrorLines(block);
        return {
          block: where(block),
          unexpected: lines.filter((error) => !marked.includes(error.line)).map((error) => error.text),
          missing: marked.filter((line) => !lines.some((error) => error.line === line)).map((line) => `line ${line} has no error`),
        };
      });
      expect(report.filter((entry) => entry.unexpected.length || entry.missing.length)).toEqual([]);
    }

    it("every block is a whole script or a whole host program importing hookbox", () => {
      expect(scripts.length).toBeGreaterThan(2);
      expect(hosts.length).toBeGreaterThan(0);
      const fragments = ofLang("ts")
        .filter((block) => !/from "hookbox"/.test(block.text))
        .map(where);
      expect(fragments).toEqual([]);
    });

    it("scripts pass hookbox check, except on lines marked // compile error", () => {
      const r = spawnSync(process.execPath, [hookboxBin, "check", ...scripts.map((block) => join(dir, fileOf(block)))], {
        cwd: repoRoot,
        encoding: "utf8",
        timeout: 120_000,
      });
      expect(r.stderr).not.toMatch(/cannot read/);
      expectOnlyMarkedErrors(scripts, r.stdout);
    }, 120_000);

    it("host programs pass tsc (strict, skipLibCheck false), except on lines marked // compile error", () => {
      const r = spawnSync(process.execPath, [join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", relative(repoRoot, dir)], {
        cwd: repoRoot,
        encoding: "utf8",
        timeout: 120_000,
      });
      expectOnlyMarkedErrors(hosts, r.stdout);
      // ...and none in what they import: hookbox's own declarations are checked too (skipLibCheck false).
      const elsewhere = r.stdout
        .split("\n")
        .filter((line) => /error TS/.test(line) && !hosts.some((block) => line.includes(fileOf(block))));
      expect(elsewhere).toEqual([]);
    }, 120_000);
  });
});
