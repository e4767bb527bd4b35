// Loaded into a real `hookbox serve` by the red-team tests (NODE_OPTIONS=--import=...): measures that
// process's own event-loop stall with the probe stall.ts uses in-process. On SIGUSR2 it writes the worst
// figures since the last SIGUSR2, with a sequence number, to $HOOKBOX_LOOP_PROBE, and starts over.
import { writeFileSync } from "node:fs";
import { startStallProbe } from "./stall-probe.mjs";

const file = process.env.HOOKBOX_LOOP_PROBE;
if (file && process.argv.includes("serve")) {
  const probe = startStallProbe();
  let seq = 0;
  process.on("SIGUSR2", () => {
    writeFileSync(file, JSON.stringify({ seq: ++seq, ...probe.read() }));
    probe.reset();
  });
}
