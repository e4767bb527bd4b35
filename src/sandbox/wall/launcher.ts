import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns, type StdioOptions } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { bwrapArgs, setprivArgs } from "./bwrap-args.js";
import { workerCgroup, type WorkerCgroup } from "./cgroup.js";
import { prlimitArgs, resourceLimits, type ResourceRequest } from "./limits.js";
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
  /**
   * The process opens a socket on a descriptor it inherited (the worker's frame pipe, fd 3): from Node 26.12 the
   * permission model refuses that without `--allow-net`, so the inner layer grants it to this process alone.
   */
  socketOnInheritedFd?: boolean;
  /** The process's resource limits inside the wall (limits.ts; defaults where absent). */
  resources?: ResourceRequest;
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
    plan: plainLaunch,
    nodePid: (child) => child.pid,
    kill: (child) => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  });
}

/** How one launch runs: the command line, and what to undo once the process is gone. */
interface LaunchPlan {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Descriptors the child gets after its stdio, in order (the host closes its copies after the spawn). */
  extraFds?: number[];
  /** Called once the process has exited (or failed to start). */
  cleanup?: () => void;
}

interface CommandLauncher {
  wall: WallKind;
  plan: (request: LaunchRequest) => LaunchPlan;
  nodePid: Launcher["nodePid"];
  kill: Launcher["kill"];
}

function plainLaunch(request: LaunchRequest): LaunchPlan {
  return {
    command: process.execPath,
    args: [...(request.nodeArgs ?? []), request.entry, ...(request.args ?? [])],
    env: { ...process.env, ...request.env },
  };
}

/** `stdio` as an array, with `extra` descriptors after it. */
function withExtraFds(stdio: StdioOptions, extra: number[] = []): StdioOptions {
  const base = Array.isArray(stdio) ? stdio : [stdio, stdio, stdio];
  return extra.length ? [...base, ...extra] : base;
}

/** A launcher that runs the command line it plans for each request. */
function commandLauncher(spec: CommandLauncher): Launcher {
  return {
    wall: spec.wall,
    launch: (request) => {
      const plan = spec.plan(request);
      try {
        const child = spawn(plan.command, plan.args, {
          stdio: withExtraFds(request.stdio, plan.extraFds),
          env: plan.env,
        });
        if (plan.cleanup) child.once("close", plan.cleanup).once("error", plan.cleanup);
        return child;
      } finally {
        for (const fd of plan.extraFds ?? []) closeSync(fd);
      }
    },
    launchSync: (request, options) => {
      const plan = spec.plan(request);
      try {
        return spawnSync(plan.command, plan.args, {
          encoding: "utf8",
          timeout: options.timeoutMs,
          killSignal: "SIGKILL",
          // The request's stdio, so the descriptors after it are where the plan counted them (the filter's).
          stdio: withExtraFds(request.stdio, plan.extraFds),
          env: plan.env,
        });
      } finally {
        for (const fd of plan.extraFds ?? []) closeSync(fd);
        plan.cleanup?.();
      }
    },
    nodePid: spec.nodePid,
    kill: spec.kill,
  };
}

export interface BubblewrapTools {
  bwrap: string;
  /** Needed when the host runs as root (see bwrap-args.ts). */
  setpriv?: string;
  /** Sets the resource limits inside (limits.ts); without it the workers run without rlimits (the doctor says so). */
  prlimit?: string;
  hostIsRoot: boolean;
  /** The syscall filter's file (seccomp/filter-file.ts); none where the wall has no filter for this architecture. */
  seccompFile?: string;
}

/*
 * Joins the cgroup files given before "--" with the shell's own pid, then becomes the command after it:
 * bwrap and everything it starts are in the worker's cgroup from their first instruction.
 */
const JOIN_CGROUP = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/** The second wall: bubblewrap around Node, with Node's permission model inside. */
export function bubblewrapLauncher(tools: BubblewrapTools): Launcher {
  const views = new Map<string, WallView>();
  const viewFor = (files: string[]): WallView => {
    const key = files.join("\0");
    let view = views.get(key);
    if (view === undefined) {
      const helpers = { ...(tools.hostIsRoot ? { setpriv: tools.setpriv } : {}), ...(tools.prlimit ? { prlimit: tools.prlimit } : {}) };
      views.set(key, (view = wallView({ files, ...helpers })));
    }
    return view;
  };
  const plan = (request: LaunchRequest): LaunchPlan => {
    const view = viewFor([request.entry, ...(request.reads ?? [])]);
    const env: Record<string, string> = { ...view.env, ...request.env };
    const stdioCount = Array.isArray(request.stdio) ? request.stdio.length : 3;
    // The filter's descriptor comes right after the stdio. bwrap closes it once it has read the filter, so Node
    // finds that number free and takes it for its own (the event loop's epoll): the inside must not close it.
    const seccompFd = tools.seccompFile === undefined ? undefined : stdioCount;
    const extraFds = tools.seccompFile === undefined ? [] : [openSync(tools.seccompFile, "r")];
    const closeInside = inheritedFds(stdioCount + extraFds.length);
    const limits = resourceLimits(request.resources);
    const node = [
      INSIDE.node,
      ...(request.innerLayer === false
        ? []
        : permissionFlags(view.readable, { socketOnInheritedFd: request.socketOnInheritedFd === true })),
      ...(request.nodeArgs ?? []),
      view.entries.get(request.entry)!,
      ...(request.args ?? []),
      ...(closeInside.length ? [`${CLOSE_FDS_FLAG}${closeInside.join(",")}`] : []),
    ];
    const drop = tools.hostIsRoot ? [INSIDE.setpriv, ...setprivArgs()] : [];
    const limit = tools.prlimit ? [INSIDE.prlimit, ...prlimitArgs(limits, { sharedUid: tools.hostIsRoot })] : [];
    const bwrap = [tools.bwrap, ...bwrapArgs({ view, env, hostIsRoot: tools.hostIsRoot, seccompFd }), ...drop, ...limit, ...node];
    let cgroup: WorkerCgroup | undefined;
    try {
      cgroup = workerCgroup(limits);
    } catch (error) {
      for (const fd of extraFds) closeSync(fd);
      throw error;
    }
    // bwrap itself gets no host variable either.
    if (cgroup === undefined) return { command: bwrap[0], args: bwrap.slice(1), env: {}, extraFds };
    return {
      command: "/bin/sh",
      args: ["-c", JOIN_CGROUP, "hookbox-cgroup", ...cgroup.procsFiles, "--", ...bwrap],
      env: {},
      extraFds,
      cleanup: cgroup.remove,
    };
  };
  return commandLauncher({
    wall: "bubblewrap",
    plan,
    nodePid: (child) => (child.pid === undefined ? undefined : innermostPid(child.pid)),
    kill: (child) => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) killTree(child.pid);
    },
  });
}
