// node scripts/mutation/survivors.mjs <module> [--write]: every mutant of reports/mutation/<module>.json that no test
// killed (survived or without coverage) must have a row in docs/mutation/<module>.md saying why it is harmless.
// Prints the ones without a row and the rows whose mutant no longer survives, and exits 1 when any is unexplained.
// --write appends a row with an empty reason for each unexplained survivor, to fill in by hand.
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const [name, flag] = process.argv.slice(2);
if (!name) throw new Error("usage: survivors.mjs <module> [--write]");
const reportPath = join(root, "reports/mutation", `${name}.json`);
if (!existsSync(reportPath)) throw new Error(`no report ${reportPath}: run npm run mutation -- ${name} first`);
const docPath = join(root, "docs/mutation", `${name}.md`);

const survivors = [];
for (const [file, { mutants }] of Object.entries(JSON.parse(readFileSync(reportPath, "utf8")).files))
  for (const m of mutants)
    if (m.status === "Survived" || m.status === "NoCoverage")
      survivors.push({
        key: `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName}`,
        replacement: cell(m.replacement ?? ""),
        status: m.status,
      });

const rows = existsSync(docPath) ? parseRows(readFileSync(docPath, "utf8")) : [];
const explained = (s) => rows.some((r) => r.key === s.key && (r.replacement === "*" || r.replacement === s.replacement) && r.why);
const unexplained = survivors.filter((s) => !explained(s));
const stale = rows.filter((r) => !survivors.some((s) => s.key === r.key && (r.replacement === "*" || r.replacement === s.replacement)));

for (const s of unexplained) process.stdout.write(`unexplained: ${s.key} ${s.replacement} (${s.status})\n`);
for (const r of stale) process.stdout.write(`stale row (the mutant is killed now, or its line moved): ${r.key} ${r.replacement}\n`);
process.stdout.write(
  `${name}: ${survivors.length} survivors, ${survivors.length - unexplained.length} explained, ${stale.length} stale rows\n`,
);

if (flag === "--write" && unexplained.length) {
  mkdirSync(dirname(docPath), { recursive: true });
  if (!existsSync(docPath))
    writeFileSync(
      docPath,
      `# Surviving mutants: ${name}\n\nEach mutant of \`npm run mutation -- ${name}\` that no test kills, and why it is harmless.\n` +
        `\`node scripts/mutation/survivors.mjs ${name}\` checks that every one has a row.\n\n` +
        `| mutant | replacement | why it is harmless |\n| --- | --- | --- |\n`,
    );
  appendFileSync(docPath, unexplained.map((s) => `| ${s.key} | ${s.replacement} | |\n`).join(""));
}
process.exitCode = unexplained.length ? 1 : 0;

/** A replacement as one table cell: one line, pipes escaped, at most 80 characters. */
function cell(text) {
  const line = text.replace(/\s+/g, " ").trim();
  return (line.length > 80 ? `${line.slice(0, 77)}...` : line).replaceAll("|", "\\|") || "(empty)";
}

/** The table rows of an explanations file: mutant key, replacement (or `*` for every one at that key), reason. */
function parseRows(text) {
  const rows = [];
  for (const line of text.split("\n")) {
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.length !== 3 || !/^\S+:\d+:\d+ \w+$/.test(cells[0])) continue;
    rows.push({ key: cells[0], replacement: cells[1], why: cells[2] });
  }
  return rows;
}
