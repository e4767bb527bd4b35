export { createSandboxPool, type SandboxPoolOptions, type SupervisedSandboxPool, type WorkerInfo } from "./pool.js";
export * from "./api.js";
