// What a statement SQLite compiles again at every execution costs on this Node's SQLite, against the same statement
// with its parameters hidden from the query planner (`+?`, as src/store/sqlite-statements.ts writes them). Shapes of
// the store's own statements, on an in-memory table of 200 runs of 30 records: the latest record of a kind
// (the hook record insert's subquery), a max() (a session log's next position), a page (LIMIT ?).
// Prints one JSON object: per shape, microseconds a call and SQLite's re-prepare count per call, bare and with `+?`.
// node scripts/bench/sqlite-reprepare.mjs [--calls N]
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { calls: { type: "string", default: "50000" } } });
const calls = Number(values.calls);
const db = new DatabaseSync(":memory:");
db.exec(`CREATE TABLE records (run_num INTEGER NOT NULL, seq INTEGER NOT NULL, kind INTEGER NOT NULL, idx INTEGER NOT NULL);
  CREATE UNIQUE INDEX records_by_run ON records (run_num, seq, idx, kind);`);
const insert = db.prepare("INSERT INTO records VALUES (?, ?, ?, ?)");
for (let run = 0; run < 200; run++) for (let seq = 0; seq < 30; seq++) insert.run(run, seq, seq % 3, seq);

const shapes = {
  latest_of_kind: "SELECT idx FROM records WHERE run_num = ?1 AND kind = 1 ORDER BY seq DESC, idx DESC LIMIT 1",
  max: "SELECT max(seq) FROM records WHERE run_num = ?1",
  page: "SELECT seq FROM records WHERE run_num = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
};

/** Microseconds a call and re-prepares a call (where this Node's statements report them) of `sql`. */
function measure(sql) {
  const statement = db.prepare(sql);
  const args = (i) => [i % 200, 3, 10].slice(0, (sql.match(/\?\d/g) ?? []).length);
  for (let i = 0; i < 1000; i++) statement.all(...args(i));
  const before = typeof statement.stat === "function" ? statement.stat("reprepare") : undefined;
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) statement.all(...args(i));
  const us = Number(process.hrtime.bigint() - start) / 1e3 / calls;
  const reprepares = before === undefined ? null : (statement.stat("reprepare") - before) / calls;
  return { us: Math.round(us * 100) / 100, reprepares_per_call: reprepares };
}

const result = { node: process.version, sqlite: process.versions.sqlite };
for (const [name, sql] of Object.entries(shapes)) {
  result[name] = { bare: measure(sql), hidden: measure(sql.replace(/\?(\d)/g, "+?$1")) };
}
console.log(JSON.stringify(result));
