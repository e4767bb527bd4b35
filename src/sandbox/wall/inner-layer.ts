/*
 * Node's permission model, the wall's inner layer: inside bubblewrap, the process may read only the files
 * it loads and load native addons (isolated-vm is one). Everything else the model governs stays denied:
 * writing files, child processes, worker threads, the network (Node 25+; a sandbox worker, whose frame pipe
 * Node 26.12 counts as network, is allowed it: see permissionFlags), WASI, the inspector.
 * It stops JavaScript that got out of an isolate into the worker's Node realm; native code ignores it,
 * which is what bubblewrap is for.
 */
export function permissionFlags(readable: string[], options: { socketOnInheritedFd?: boolean } = {}): string[] {
  return [
    "--permission",
    "--allow-addons",
    // Node 26.12 gates a socket opened on an inherited descriptor (the worker's frame pipe) behind --allow-net.
    // Granted only to a process that needs it, and only where Node knows the flag (Node 24 does not); outside
    // the pipe, the network stays shut by the wall's other layers: no network namespace, the syscall filter.
    ...(options.socketOnInheritedFd && process.allowedNodeEnvironmentFlags.has("--allow-net") ? ["--allow-net"] : []),
    ...readable.map((path) => `--allow-fs-read=${path}`),
    // Node warns on every start that addons may bypass the model: known (bubblewrap is the outer layer).
    "--disable-warning=SecurityWarning",
  ];
}
