import { checkWall } from "../../src/sandbox/wall/mode.js";
import type { Launcher } from "../../src/sandbox/wall/launcher.js";

/** The message every wall-dependent test fails with where bubblewrap is missing: never a silent skip. */
export function wallMissing(reason: string): string {
  return `the sandbox's second wall does not work on this machine (${reason}): install bubblewrap (apt-get install bubblewrap); CI installs it`;
}

/** The launcher the sandbox workers use here (`sandbox.wall` auto or required); throws when there is no wall. */
export function wallLauncher(): Launcher {
  const check = checkWall();
  if (!check.ok) throw new Error(wallMissing(check.reason));
  return check.launcher;
}
