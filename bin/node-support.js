// Which Node hookbox runs on, written for any Node. Importing this module throws, with one line, on a Node older
// than 24: the CLI (bin/hookbox.js) prints that line, and the library (dist/index.js imports this file before
// anything else) throws it. The sandbox's V8 must be a line that still gets security fixes, and older lines
// cannot even load isolated-vm 7.
const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  // The fetch script ships with the package, so the hint works from a checkout and from node_modules alike.
  const fetchNode = new URL("../scripts/fetch-node.sh", import.meta.url).pathname;
  throw Object.assign(
    new Error(
      `hookbox: Node ${process.versions.node} is not supported; hookbox needs Node 24 or 26 (LTS lines whose V8 still ` +
        `gets security fixes; older V8 lines have public sandbox escapes). Get one with: export PATH="$(bash ${fetchNode} 26):$PATH"`,
    ),
    { code: "UNSUPPORTED_NODE" },
  );
}
