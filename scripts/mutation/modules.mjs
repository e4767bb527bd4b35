// The modules `npm run mutation` mutates, one Stryker run each, and the test files that can kill their mutants.
// Only tests that run the module in the test's own process count: Stryker switches mutants on inside the test
// process, so a test that drives the CLI or `hookbox serve` (dist/, built unmutated) or a sandbox worker never sees
// one. Run one module with `npm run mutation -- <name>`; scores and the survivors' explanations: docs/security.md.
export const MODULES = {
  "hook-chain": { mutate: ["src/loop/hook-chain.ts"], tests: ["test/loop/*.test.ts", "test/policy/shadow-capabilities.test.ts"] },
  // The loop test files that reach an approval (the others never open one).
  approvals: {
    mutate: ["src/loop/approvals.ts"],
    tests: [
      "test/loop/approvals.test.ts",
      "test/loop/loop-bounds.test.ts",
      "test/loop/guarded-args.test.ts",
      "test/loop/hook-chain.test.ts",
      "test/loop/run-hooks.test.ts",
    ],
  },
  "run-budget": { mutate: ["src/loop/run-budget.ts"], tests: ["test/loop/*.test.ts", "test/capabilities/redteam-capabilities.test.ts"] },
  redact: { mutate: ["src/server/redact.ts"], tests: ["test/server/redact.test.ts"] },
  // Not test/store/migration-schema6: it sets no quota (and runs the CLI's dist/), so it reaches none of quota.ts.
  quota: {
    mutate: ["src/store/quota.ts"],
    tests: ["test/store/store-contract.test.ts", "test/store/sqlite-file.test.ts", "test/session/*.test.ts"],
  },
  // src/capabilities/ in four scoped runs that together mutate every file, each with only the test files that reach
  // its files in the test's own process: ctx.fetch's address and URL rules and its connection, ctx.fetch itself with
  // its secrets, ctx.kv and ctx.model, and the rest.
  "capabilities-egress": {
    mutate: ["src/capabilities/addresses.ts", "src/capabilities/egress.ts", "src/capabilities/egress-connect.ts"],
    tests: [
      "test/capabilities/egress.property.test.ts",
      "test/capabilities/egress-connect.test.ts",
      "test/capabilities/config.test.ts",
      "test/capabilities/egress-addresses.test.ts",
      "test/capabilities/egress-paths.test.ts",
      "test/capabilities/egress-rules.test.ts",
      "test/capabilities/fetch.test.ts",
    ],
  },
  "capabilities-fetch": {
    mutate: ["src/capabilities/fetch.ts", "src/capabilities/egress-secrets.ts"],
    tests: [
      "test/capabilities/egress-paths.test.ts",
      "test/capabilities/egress-secrets.test.ts",
      "test/capabilities/egress-addresses.test.ts",
      "test/capabilities/fetch.test.ts",
      "test/capabilities/egress-secret-values.test.ts",
    ],
  },
  // Only in-process tests: requests.ts's zod schemas are built at import, so most of its mutants are static and each
  // runs every listed test; the sandbox tests of the same rules (guard-budget, refusal-flood, redteam-capabilities,
  // waiting) would add half a minute to each of them.
  "capabilities-kv-model": {
    mutate: ["src/capabilities/kv.ts", "src/capabilities/guard-model.ts", "src/capabilities/broker.ts", "src/capabilities/requests.ts"],
    tests: [
      "test/capabilities/kv-broker.test.ts",
      "test/capabilities/capability-requests.test.ts",
      "test/capabilities/guard-broker.test.ts",
    ],
  },
  // The rest of src/capabilities/: a tenant's grants and limits, the brokers of its runs, and the guard model's
  // summaries of what leaves a run's context (also reached in-process by the library's context-window tests).
  "capabilities-rest": {
    mutate: ["src/capabilities/grants.ts", "src/capabilities/tenant-capabilities.ts", "src/capabilities/context-summary.ts"],
    tests: [
      "test/capabilities/tenant-capabilities.test.ts",
      "test/capabilities/context-summary.test.ts",
      "test/session/context-window.test.ts",
    ],
  },
  // The wall's syscall filter (its BPF assembler and program), run by the interpreter of test/wall/seccomp-filter.test.ts:
  // the rest of the wall is host code whose effects only a walled process shows, in tests that spawn one per case.
  "wall-filter": {
    mutate: ["src/sandbox/wall/seccomp/bpf.ts", "src/sandbox/wall/seccomp/filter.ts"],
    tests: ["test/wall/seccomp-filter.test.ts", "test/wall/seccomp.test.ts"],
  },
  // The rest of the wall, scoped: each part with the fast tests of the value it builds (in the test's own process) and,
  // as the end-to-end guard, the real-bubblewrap tests that launch through it in-process (slower; a slow bwrap start
  // must not count as a kill, hence the longer timeouts).
  "wall-args": {
    mutate: [
      "src/sandbox/wall/bwrap-args.ts",
      "src/sandbox/wall/limits.ts",
      "src/sandbox/wall/inner-layer.ts",
      "src/sandbox/wall/inherited-fds.ts",
    ],
    tests: ["test/wall/launch-args.test.ts", "test/wall/inside.test.ts"],
    timeoutMS: 60_000,
    testTimeoutMs: 120_000,
  },
  "wall-view": {
    mutate: ["src/sandbox/wall/view.ts"],
    tests: ["test/wall/view.test.ts", "test/wall/inside.test.ts"],
    timeoutMS: 60_000,
    testTimeoutMs: 120_000,
  },
  // The launcher with a stand-in bwrap that reports what it got, and real process trees: no bubblewrap start, so the
  // default timeouts. The real-bwrap tests that launch through it (inside.test.ts, worker-death.test.ts) took 10 s to
  // minutes a mutant here (a pool retries a broken launch until the test's timeout); they guard it in npm test.
  "wall-launcher": {
    mutate: ["src/sandbox/wall/launcher.ts", "src/sandbox/wall/process-tree.ts", "src/sandbox/wall/probe-run.ts"],
    tests: ["test/wall/launcher.test.ts", "test/wall/process-tree.test.ts"],
  },
  // The worker's cgroup and the doctor's checks of the wall in depth (which read it). native.test.ts's bombs (a
  // fork bomb and a 2.5 GB memory bomb per run) stay the end-to-end guard in npm test, not here.
  "wall-cgroup": {
    mutate: ["src/sandbox/wall/cgroup.ts", "src/sandbox/wall/doctor-depth.ts"],
    tests: ["test/wall/cgroup.test.ts", "test/wall/launcher.test.ts"],
    timeoutMS: 60_000,
    testTimeoutMs: 120_000,
  },
  // The doctor and the wall's mode, through the library (doctor.test.ts and modes.test.ts drive the CLI's dist/);
  // runDoctor starts the real walled probe.
  "wall-doctor": {
    mutate: ["src/sandbox/wall/doctor-checks.ts", "src/sandbox/wall/mode.ts"],
    tests: ["test/wall/doctor-library.test.ts", "test/wall/mode-unavailable.test.ts"],
    timeoutMS: 60_000,
    testTimeoutMs: 120_000,
  },
  // The rest of the filter's folder: where this host's program is written, and which architectures have one.
  "wall-filter-file": {
    mutate: ["src/sandbox/wall/seccomp/filter-file.ts", "src/sandbox/wall/seccomp/syscalls.ts"],
    tests: ["test/wall/filter-file.test.ts", "test/wall/seccomp.test.ts"],
  },
};
