/*
 * `import { loadPolicy, defineCases } from "hookbox/testing"`: what a policy author's tests use (docs/testing.md).
 * Built as dist/testing.js, with declarations in dist/types/testing/.
 */

// First: on an unsupported Node, the helper refuses with the CLI's one line before anything else runs.
import "../../bin/node-support.js";

export {
  loadPolicy,
  type Policy,
  type PolicySession,
  type PolicyCalls,
  type PolicyFixtures,
  type PolicyGrants,
  type LoadPolicyOptions,
  type RunState,
  type ToolCallInput,
  type AfterToolCallInput,
  type OnToolErrorInput,
  type BeforeRunInput,
  type BeforeFinishInput,
  type MiddlewareInput,
  type MiddlewareOutcome,
} from "./load-policy.js";
export { defineCases, type CaseFile } from "./define-cases.js";
export { HookboxError, isHookboxError } from "../errors.js";
