/*
 * stdout as a reader may close it: `hookbox run --json | head -1` stops reading after one line. Writing on then
 * fails with EPIPE; the CLI takes that as "nobody reads any more": it stops writing, cancels a run it follows
 * (src/cli/drive-run.ts) and exits quietly with 141, the status of a process ended by SIGPIPE, as `yes | head -1`
 * does. Any other stdout error is still thrown.
 */

const closed = new AbortController();

/** Aborts when stdout's reader has gone. */
export const stdoutClosed: AbortSignal = closed.signal;

/** The exit status once stdout's reader has gone (128 + SIGPIPE). */
export const STDOUT_CLOSED_EXIT = 141;

/** Installs the EPIPE handling; called once by the CLI's entry point. */
export function watchStdout(): void {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE" || closed.signal.aborted) {
      closed.abort();
      return;
    }
    throw error;
  });
}
