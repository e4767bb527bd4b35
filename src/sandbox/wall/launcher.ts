import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns, type StdioOptions } from "node:child_process";
import { bwrapArgs, setprivArgs } from "./bwrap-args.js";
import { permissionFlags } from "./inner-layer.js";
import { CLOSE_FDS_FLAG, inheritedFds } from "./inherited-fds.js";
import { innermostPid, killTree } from "./process-tree.js";
import { INSIDE, wallView, type WallView } from "./view.js";

/** How a launcher starts Node processes: inside the second wall, or as plain children of the host. */
export type WallKind = "bubblewrap" | "none";

export interface LaunchRequest {
  /** The JS file to run (host path). */
  entry: string;
  /** Other files it reads, bound beside it (e.g. dist/runtime.js). */
  reads?: string[];
  /** Node flags before the entry (e.g. --no-node-snapshot). */
  nodeArgs?: string[];
  args?: string[];
  stdio: StdioOptions;
  /** Variables the process needs; with the wall on, the only ones it gets. */
  env?: Record<string, string>;
  /**
   * Node's permission model inside the wall (default true). Off only to measure what bubblewrap alone holds,
   * i.e. what native code that ignores the permission model faces (the doctor and the wall's tests).
   */
  innerLayer?: boolean;
}

/** Starts every sandbox worker process (and the doctor's probe, the same way). */
export interface Launcher {
  readonly wall: WallKind;
  launch(request: LaunchRequest): ChildProcess;
  launchSync(request: LaunchRequest, options: { timeoutMs: number }): SpawnSyncReturns<string>;
  /** The host pid of the Node process a launched child runs (inside the wall: not the child's own pid). */
  nodePid(child: ChildProcess): number | undefined;
  /** SIGKILLs a launched child and whatever it started. */
  kill(child: ChildProcess): void;
}

/** No wall: Node as a direct child with the host's environment (the opt-out, and `auto` without bubblewrap). */
export function plainLauncher(): Launcher {
  return commandLauncher({
    wall: "none",
    command: process.execPath,
    args: (request) => [...(request.nodeArgs ?? []), request.entry, ...(request.args ?? [])],
    env: (request) => ({ ...process.env, ...request.env }),
    nodePid: (child) => child.pid,
    kill: (child) => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  });
}

interface CommandLauncher {
  wall: WallKind;
  command: string;
  args: (request: LaunchRequest) => string[];
  env: (request: LaunchRequest) => NodeJS.ProcessEnv;
  nodePid: Launcher["nodePid"];
  kill: Launcher["kill"];
}

/** A launcher that runs `command` with the arguments and environment it derives from each request. */
function commandLauncher(spec: CommandLauncher): Launcher {
  return {
    wall: spec.wall,
    launch: (request) => spawn(spec.command, spec.args(request), { stdio: request.stdio, env: spec.env(request) }),
    launchSync: (request, options) =>
      spawnSync(spec.command, spec.args(request), {
        encoding: "utf8",
        timeout: options.timeoutMs,
        killSignal: "SIGKILL",
        env: spec.env(request),
      }),
    nodePid: spec.nodePid,
    kill: spec.kill,
  };
}

export interface BubblewrapTools {
  bwrap: string;
  /** Needed when the host runs as root (see bwrap-args.ts). */
  setpriv?: string;
  hostIsRoot: boolean;
}

/** The second wall: bubblewrap around Node, with Node's permission model inside. */
export function bubblewrapLauncher(tools: BubblewrapTools): Launcher {
  const views = new Map<string, WallView>();
  const viewFor = (files: string[]): WallView => {
    const key = files.join("\0");
    let view = views.get(key);
    if (view === undefined) views.set(key, (view = wallView({ files, ...(tools.hostIsRoot ? { setpriv: tools.setpriv } : {}) })));
    return view;
  };
  const argv = (request: LaunchRequest): string[] => {
    const view = viewFor([request.entry, ...(request.reads ?? [])]);
    const env: Record<string, string> = { ...view.env, ...request.env };
    const stdioCount = Array.isArray(request.stdio) ? request.stdio.length : 3;
    const inherited = inheritedFds(stdioCount);
    const node = [
      INSIDE.node,
      ...(request.innerLayer === false ? [] : permissionFlags(view.readable)),
      ...(request.nodeArgs ?? []),
      view.entries.get(request.entry)!,
      ...(request.args ?? []),
      ...(inherited.length ? [`${CLOSE_FDS_FLAG}${inherited.join(",")}`] : []),
    ];
    const drop = tools.hostIsRoot ? [INSIDE.setpriv, ...setprivArgs()] : [];
    return [...bwrapArgs({ view, env, hostIsRoot: tools.hostIsRoot }), ...drop, ...node];
  };
  return commandLauncher({
    wall: "bubblewrap",
    command: tools.bwrap,
    args: argv,
    // bwrap itself gets no host variable either.
    env: () => ({}),
    nodePid: (child) => (child.pid === undefined ? undefined : innermostPid(child.pid)),
    kill: (child) => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) killTree(child.pid);
    },
  });
}
