/** Resolves after `ms`, or rejects at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Settles with `promise`, or rejects at once when `signal` aborts (the work itself may go on). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Who to tell when `signal` aborts, with one listener on it however many come and go: each tool call of a batch
 * adds itself and leaves when it ends, and an EventTarget listener costs several objects every time. A callback
 * added to an already aborted signal is never called (as with addEventListener).
 */
export function abortWatchers(signal: AbortSignal): Set<(reason: unknown) => void> {
  let watching = watchers.get(signal);
  if (watching === undefined) {
    const created = new Set<(reason: unknown) => void>();
    watching = created;
    watchers.set(signal, created);
    signal.addEventListener(
      "abort",
      () => {
        for (const watcher of [...created]) watcher(signal.reason);
      },
      { once: true },
    );
  }
  return watching;
}
const watchers = new WeakMap<AbortSignal, Set<(reason: unknown) => void>>();
