/*
 * `import { loadPolicy, defineCases } from "hookbox/testing"`: what a policy author's tests use (docs/policy-tests.md).
 * Built as dist/testing.js; its declarations are types/testing.d.ts.
 */

// First: on an unsupported Node, the helper refuses with the CLI's one line before anything else runs.
import "../../bin/node-support.js";

export { loadPolicy } from "./load-policy.js";
export { defineCases } from "./define-cases.js";
