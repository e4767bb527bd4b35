export { createSandboxPool, type SandboxPoolOptions, type SupervisedSandboxPool, type WorkerInfo, type PoolStats } from "./pool.js";
export * from "./api.js";
