import { setFlagsFromString } from "node:v8";

/**
 * How V8 collects a tenant isolate's heap. Every run's context is a copy of the runtime's snapshot, made in old
 * space (~230 KB a context), and is garbage once its run closes; so a busy tenant's old generation fills with dead
 * contexts, and each full collection marks what is still live: the runtime and the contexts of the runs in flight.
 * Left to its heuristics, V8 collects an isolate of a 64 MB limit whenever it has grown ~8 MB past what was live
 * (its growth factor for heaps this small is 1.3): every ~35 runs, each time marking every run in flight again.
 * That was ~15-25% of a worker's CPU at one context a run (BENCHMARKS.md, "The worker's CPU a run: collecting the dead run contexts").
 *
 * So the worker sets two of V8's heap flags before it makes any isolate (V8 reads them when it makes one; the
 * worker's own Node heap, made before, keeps its defaults):
 * - a growth factor of 4: an isolate is collected once its old generation is 4 times what was live after the last
 *   full collection (V8 still caps that at halfway between the live size and the isolate's limit), so a tenant
 *   with many runs in flight pays a collection per ~3 x its live size of new contexts, not per 8 MB;
 * - a floor of 16 MB (at most half the tenant's `memoryMb`), below which V8 skips full collections: a busy tenant
 *   with few runs in flight is collected every ~60 runs, holding ~4 MB more than before at its peak.
 * What the memory limit enforces is unchanged: isolated-vm checks the live size after each full collection.
 */
const GROWTH_PERCENT = 300;
const FULL_COLLECTION_FLOOR_MB = 16;

export function configureTenantHeaps(): void {
  setFlagsFromString(`--heap-growing-percent=${GROWTH_PERCENT}`);
  setFlagsFromString(`--initial-old-space-size=${FULL_COLLECTION_FLOOR_MB}`);
}
