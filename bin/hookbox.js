#!/usr/bin/env node
// The CLI lives in dist/cli.js, built by `npm run build` (and by `prepare`, so `npm ci` builds it).
import { main } from "../dist/cli.js";

process.exitCode = await main(process.argv.slice(2));
