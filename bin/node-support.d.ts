// Importing bin/node-support.js throws on a Node older than 24 (the CLI's one line); it exports nothing.
export {};
