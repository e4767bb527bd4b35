#!/usr/bin/env node
// The CLI lives in dist/cli.js, built by `npm run build` (and by `prepare`, so `npm ci` builds it).
// The Node check comes first and is written for any Node: the sandbox's V8 must be a line that still gets
// security fixes, and older lines cannot even load isolated-vm 7.
const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  // The fetch script ships with the package, so the hint works from a checkout and from node_modules alike.
  const fetchNode = new URL("../scripts/fetch-node.sh", import.meta.url).pathname;
  process.stderr.write(
    `hookbox: Node ${process.versions.node} is not supported; hookbox needs Node 24 or 26 (LTS lines whose V8 still ` +
      `gets security fixes; older V8 lines have public sandbox escapes). Get one with: export PATH="$(bash ${fetchNode} 26):$PATH"\n`,
  );
  process.exit(2);
}
const { main } = await import("../dist/cli.js");
const code = await main(process.argv.slice(2));
// The command is over once main returns; a host tool that ignored its abort signal may still hold a timer,
// and it must not keep the process alive. Exit as soon as what was written has reached stdout and stderr.
const flushed = (stream) => new Promise((resolve) => stream.write("", resolve));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
