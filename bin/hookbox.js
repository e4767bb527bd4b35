#!/usr/bin/env node
// The CLI lives in dist/cli.js, built by `npm run build` (and by `prepare`, so `npm ci` builds it).
// The Node check comes first and is written for any Node (node-support.js throws its one line).
try {
  await import("./node-support.js");
} catch (error) {
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}
const { main } = await import("../dist/cli.js");
const code = await main(process.argv.slice(2));
// The command is over once main returns; a host tool that ignored its abort signal may still hold a timer,
// and it must not keep the process alive. Exit as soon as what was written has reached stdout and stderr.
const flushed = (stream) => new Promise((resolve) => stream.write("", resolve));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
