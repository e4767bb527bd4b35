import { readAvailable } from "./wire/framing.js";
import type { PollPolicy } from "./wire/poll-policy.js";

/*
 * Waiting for a worker's reply without putting the host to sleep. A round trip to a sandbox worker is
 * tens of microseconds of work, but if the host's event loop sleeps meanwhile, waking it costs more than
 * the work on a virtual machine: the worker's write must interrupt an idle CPU, and the host must come
 * back out of it (measured here: a reply after 30 us of worker time took 82 us to arrive instead of 43).
 *
 * So, for a short window after each message sent (unless this worker's replies lately missed it), the event
 * loop keeps turning through setImmediate instead of sleeping, and each turn reads the awaited pipes directly
 * (non-blocking). This never blocks: every turn still polls all other I/O with a zero timeout and runs timers and callbacks; it only trades
 * a bounded amount of host CPU (the window, once per message) for latency. Once no reply is awaited or
 * the window has passed, the loop sleeps as usual and replies arrive through the pipes' sockets.
 */

/**
 * How long the loop stays awake after a message is sent (HOOKBOX_REPLY_SPIN_US; default 200, 0 turns it off).
 * A PollPolicy per worker (wire/poll-policy.ts) stops it for a while after a window that ended with the reply not
 * there, which is what happens when host and worker share one CPU and the host's turning holds up the very reply
 * it awaits.
 */
export const REPLY_SPIN_MS = Number(process.env.HOOKBOX_REPLY_SPIN_US ?? 200) / 1000;

/**
 * Most replies the host sleeps through after its polls kept missing (wire/poll-policy.ts), fewer than a worker's:
 * a host's window is not spent idle (each turn runs the loop's other I/O and callbacks), while every reply it
 * sleeps through costs a wake-up on a call's critical path. So it tries again sooner after a stretch of misses
 * (a worker descheduled for a while): after at most 16 sleeping waits rather than 256.
 */
export const REPLY_MAX_SKIPPED_WAITS = 16;

/** A pipe with replies due: its fd (non-blocking, opened by libuv), where its bytes go, and when to poll for them. */
export interface AwaitedPipe {
  fd(): number | undefined;
  push(chunk: Buffer): void;
  readonly polling: PollPolicy;
}

const awaited = new Set<AwaitedPipe>();
let awakeUntil = 0;
let turning = false;
/** Reused: push() copies what it keeps (FrameReader's contract). */
const readBuffer = Buffer.allocUnsafe(256 * 1024);

/** Reads what is already in the pipe, without waiting; an empty pipe, end of stream or error is the socket's. */
function drain(pipe: AwaitedPipe): void {
  const fd = pipe.fd();
  if (fd === undefined) return;
  const bytes = readAvailable(fd, readBuffer);
  if (bytes > 0) pipe.push(readBuffer.subarray(0, bytes));
}

function turn(): void {
  if (awaited.size === 0) {
    turning = false;
    return;
  }
  for (const pipe of awaited) drain(pipe);
  if (performance.now() >= awakeUntil) {
    // The window is over (this turn may come late, after other work: a reply there by now was caught). A pipe
    // still awaited had none of its replies here: its poll missed.
    turning = false;
    for (const pipe of awaited) pipe.polling.lapsed();
    return;
  }
  // Ref'd on purpose: only a ref'd immediate makes libuv poll with a zero timeout. It lasts the window.
  setImmediate(turn);
}

/**
 * A message that `pipe` will answer was just sent: stay awake for the reply, unless its replies lately were not
 * there when a window ended (see wire/poll-policy.ts).
 */
export function expectReply(pipe: AwaitedPipe): void {
  awaited.add(pipe);
  const windowMs = pipe.polling.beginWait();
  if (windowMs <= 0) return;
  awakeUntil = Math.max(awakeUntil, performance.now() + windowMs);
  if (!turning) {
    turning = true;
    setImmediate(turn);
  }
}

/** A reply of `pipe` came: before the window's end was judged, polling for it paid. */
export function replyArrived(pipe: AwaitedPipe): void {
  if (turning) pipe.polling.caught();
}

/** Nothing more is awaited from `pipe` (all answered, or its worker is gone). */
export function stopAwaiting(pipe: AwaitedPipe): void {
  awaited.delete(pipe);
}
