// The host <-> worker frame codec on the loop bench's messages: `node scripts/bench/frame-codec.mjs` prints one
// JSON object, the microseconds one encodeFrame and one decode (FrameReader.push of a whole frame) take for a
// hook's `call` message (the host's side: encode; the worker's: decode) and for its `done` reply (the reply's
// side), the median of several rounds. `--src FILE`: another version of src/sandbox/wire/framing.ts (A/B, e.g.
// `git show main:src/sandbox/wire/framing.ts > /tmp/framing.ts`).
import { resolve } from "node:path";
import { importSource, loopHookArgs } from "./fixtures.mjs";

const root = resolve(import.meta.dirname, "../..");
const sourceArgument = process.argv.indexOf("--src");
const source = resolve(sourceArgument > 0 ? process.argv[sourceArgument + 1] : `${root}/src/sandbox/wire/framing.ts`);
// The module is TypeScript: bundle it on the fly, as the build would.
const { encodeFrame, FrameReader } = await importSource(source);

/** An afterToolCall payload of the loop bench, as the host sends it. */
const args = loopHookArgs("afterToolCall");
const call = () => ({
  type: "call",
  tenant: "bench-loop",
  runId: "run_01a215415758dccc9c267e7ec2c32491",
  script: "bench-policy",
  bundleHash: "838f1f1435a7d991796b00f27ea2eedaee501fe130828c0e732687aad7e1195f",
  callId: 3,
  kind: "hook",
  target: "afterToolCall",
  args,
  seq: 4,
});
const done = () => ({
  type: "done",
  seq: 4,
  outcomes: [{ type: "settled", callId: 3, value: '{"result":{"n":3,"checked":true}}' }],
  logs: [],
  cpuMs: 0.05,
  isolates: 1,
  workerMs: 0.1,
});

const COUNT = 100_000;
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value) => Math.round(value * 1000) / 1000;

function measure(make) {
  let sink = 0;
  const reader = new FrameReader((message) => (sink += message.seq));
  const encode = [];
  const decode = [];
  for (let i = 0; i < 7; i++) {
    let started = performance.now();
    for (let j = 0; j < COUNT; j++) sink += encodeFrame(make()).length;
    encode.push(((performance.now() - started) * 1000) / COUNT);
    const frame = encodeFrame(make());
    started = performance.now();
    for (let j = 0; j < COUNT; j++) reader.push(frame);
    decode.push(((performance.now() - started) * 1000) / COUNT);
  }
  if (sink === 0) throw new Error("nothing measured");
  return { encode: round(median(encode)), decode: round(median(decode)), bytes: encodeFrame(make()).length };
}

const hook = measure(call);
const reply = measure(done);
process.stdout.write(
  `${JSON.stringify({
    source,
    call_encode_us: hook.encode,
    call_decode_us: hook.decode,
    call_frame_bytes: hook.bytes,
    done_encode_us: reply.encode,
    done_decode_us: reply.decode,
  })}\n`,
);
