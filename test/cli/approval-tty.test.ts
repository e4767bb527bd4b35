import { describe, expect, it } from "vitest";
import { CLEAR_LINE, driveTty as drive } from "../helpers/pty.js";
import { writeRefundFixture } from "./approval-fixture.js";

/*
 * The interactive approval prompt of `hookbox run` (human mode), driven through a real pseudo-terminal by
 * test/helpers/pty-drive.py: the CLI sees TTYs on stdin and stdout, exactly as at a person's terminal.
 */

const twoRefunds = [
  {
    toolCalls: [
      { id: "c1", name: "refund", args: { orderId: "A17", amount: 250 } },
      { id: "c2", name: "refund", args: { orderId: "B20", amount: 300 } },
    ],
  },
  { text: "done" },
];

describe("hookbox run at a terminal: the interactive approval prompt", () => {
  it("edits the arguments (a schema-breaking edit is explained and asked again), then rejects the next call with a reason", () => {
    const fixture = writeRefundFixture(twoRefunds);
    const result = drive(
      ["run", ...fixture.args, "--max-parallel-tools", "1"],
      [
        { expect: "\\[a\\]pprove, \\[r\\]eject, \\[e\\]dit arguments: ", send: "e\r" },
        { expect: "arguments \\(JSON\\): ", send: `${CLEAR_LINE}{"orderId":"A17","amount":5000}\r` },
        { expect: "refused: args\\.amount must be <= 1000", send: `${CLEAR_LINE}{"orderId":"A17","amount":120}\r` },
        { expect: 'approve refund\\(\\{"orderId":"B20"', send: "" },
        { expect: "\\[e\\]dit arguments: ", send: "r\r" },
        { expect: "reason \\(optional\\): ", send: "duplicate request\r" },
      ],
    );
    expect(result.timedOut, result.output).toBe(false);
    expect(result.status, result.output).toBe(0);
    expect(result.output).toContain('? approval needed for refund({"orderId":"A17","amount":250}) [c1]: refund of 250 is over 100');
    expect(result.output).toContain('✓ approved with {"orderId":"A17","amount":120} [c1]');
    expect(result.output).toContain('✓ refund → {"refunded":120,"orderId":"A17"}');
    expect(result.output).toContain("✗ rejected: duplicate request [c2]");
    expect(result.output).not.toContain('"refunded":300');
    expect(result.output).toContain("■ completed");
  });

  it("Ctrl-C at the prompt cancels the run at once (exit 130)", () => {
    const fixture = writeRefundFixture();
    const result = drive(["run", ...fixture.args], [{ expect: "\\[e\\]dit arguments: ", send: "\u0003" }]);
    expect(result.timedOut, result.output).toBe(false);
    expect(result.status, result.output).toBe(130);
    expect(result.output).toContain("✗ cancelled [c1]");
    expect(result.output).toContain("■ cancelled");
  });
});
