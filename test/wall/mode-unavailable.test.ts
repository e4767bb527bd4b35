import { afterAll, describe, expect, it, vi } from "vitest";
import { runDoctor } from "../../src/sandbox/wall/doctor-checks.js";
import { checkWall, workerLauncher } from "../../src/sandbox/wall/mode.js";

/*
 * A host where the wall cannot start (bubblewrap not found), through the library in this process: the check is made
 * once per process, so this file sets HOOKBOX_BWRAP before anything checks (docs/sandbox.md, "`sandbox.wall`").
 */

const saved = process.env.HOOKBOX_BWRAP;
process.env.HOOKBOX_BWRAP = "/nonexistent/bwrap";
const REASON = "HOOKBOX_BWRAP=/nonexistent/bwrap is not an executable";

afterAll(() => {
  if (saved === undefined) delete process.env.HOOKBOX_BWRAP;
  else process.env.HOOKBOX_BWRAP = saved;
});

describe("without the wall", () => {
  it("required refuses with WALL_UNAVAILABLE and the reason; auto runs plain with one warning, once; none is silent", () => {
    expect(checkWall()).toEqual({ ok: false, reason: REASON });
    const write = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      expect(() => workerLauncher("required")).toThrow(
        expect.objectContaining({
          code: "WALL_UNAVAILABLE",
          message: `sandbox.wall is "required" but the second wall cannot start here: ${REASON}`,
          details: { reason: REASON },
        }),
      );
      expect(write).not.toHaveBeenCalled();
      expect(workerLauncher("none").wall).toBe("none");
      expect(write).not.toHaveBeenCalled();
      expect(workerLauncher("auto").wall).toBe("none");
      expect(write.mock.calls).toEqual([
        [
          `hookbox: warning: sandbox workers run without the second wall (${REASON}); ` +
            "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or pass --wall none to opt out knowingly\n",
        ],
      ]);
      expect(workerLauncher().wall).toBe("none");
      expect(workerLauncher("auto").wall).toBe("none");
      expect(write).toHaveBeenCalledTimes(1);
    } finally {
      write.mockRestore();
    }
  });

  it("the doctor says the wall is off and why, and fails", async () => {
    const report = await runDoctor("auto");
    expect(report).toMatchObject({ ok: false, mode: "auto", wall: "none", wallUnavailable: REASON });
    expect(report.checks.find((check) => check.name === "wall")).toEqual({ name: "wall", ok: false, detail: `off: ${REASON}` });
  });
});
