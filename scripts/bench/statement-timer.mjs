// Preloaded into serve by scripts/bench/serve-statements.mjs (`node --import`): times every SQLite statement serve
// runs (node:sqlite's run/get/all and exec), keyed by its SQL. SIGUSR2 starts counting (dropping what came before);
// the next SIGUSR2 writes the counts and times since then to the file named by HOOKBOX_STATEMENT_TIMES.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const { DatabaseSync, StatementSync } = createRequire(import.meta.url)("node:sqlite");
let times = new Map();
const record = (sql, ns) => {
  const key = sql.replace(/\s+/g, " ").trim();
  const entry = times.get(key) ?? { calls: 0, ns: 0, maxNs: 0 };
  entry.calls++;
  entry.ns += ns;
  entry.maxNs = Math.max(entry.maxNs, ns);
  times.set(key, entry);
};
const timed = (original, sqlOf) =>
  function (...args) {
    const start = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      record(sqlOf(this, args), Number(process.hrtime.bigint() - start));
    }
  };
DatabaseSync.prototype.exec = timed(DatabaseSync.prototype.exec, (_db, [sql]) => String(sql));
for (const method of ["run", "get", "all"])
  StatementSync.prototype[method] = timed(StatementSync.prototype[method], (statement) => statement.sourceSQL);

let counting = false;
process.on("SIGUSR2", () => {
  if (counting) writeFileSync(process.env.HOOKBOX_STATEMENT_TIMES, JSON.stringify([...times]));
  counting = !counting;
  times = new Map();
});
