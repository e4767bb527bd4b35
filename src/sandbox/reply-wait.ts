/*
 * Waiting for a worker's reply without putting the host to sleep. A round trip to a sandbox worker is
 * tens of microseconds of work, but if the host's event loop sleeps meanwhile, waking it costs more than
 * the work on a virtual machine: the worker's write must interrupt an idle CPU, and the host must come
 * back out of it (measured here: a reply after 30 us of worker time took 82 us to arrive instead of 43).
 *
 * So, for a short window after each message sent, the event loop keeps turning through setImmediate
 * instead of sleeping. This never blocks: every turn still polls all I/O (with a zero timeout), runs
 * timers and other callbacks; it only trades a bounded amount of host CPU (the window, once per message)
 * for latency. Once nothing is awaited or the window has passed, the loop sleeps as usual.
 */

/** How long the loop stays awake after a message is sent; HOOKBOX_REPLY_SPIN_US=0 turns it off. */
const WINDOW_MS = Number(process.env.HOOKBOX_REPLY_SPIN_US ?? 200) / 1000;

let awaited = 0;
let awakeUntil = 0;
let turning = false;

function turn(): void {
  if (awaited === 0 || performance.now() >= awakeUntil) {
    turning = false;
    return;
  }
  // Ref'd on purpose: only a ref'd immediate makes libuv poll with a zero timeout. It lasts the window.
  setImmediate(turn);
}

/** A message that will be answered was just sent. */
export function expectReply(): void {
  awaited++;
  if (WINDOW_MS <= 0) return;
  awakeUntil = performance.now() + WINDOW_MS;
  if (!turning) {
    turning = true;
    setImmediate(turn);
  }
}

/** A reply arrived, or will never arrive (the worker is gone). */
export function replySettled(): void {
  if (awaited > 0) awaited--;
}
