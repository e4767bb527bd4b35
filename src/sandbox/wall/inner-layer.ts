/*
 * Node's permission model, the wall's inner layer: inside bubblewrap, the process may read only the files
 * it loads and load native addons (isolated-vm is one). Everything else the model governs stays denied:
 * writing files, child processes, worker threads, the network (Node 25+), WASI, the inspector.
 * It stops JavaScript that got out of an isolate into the worker's Node realm; native code ignores it,
 * which is what bubblewrap is for.
 */
export function permissionFlags(readable: string[]): string[] {
  return [
    "--permission",
    "--allow-addons",
    ...readable.map((path) => `--allow-fs-read=${path}`),
    // Node warns on every start that addons may bypass the model: known (bubblewrap is the outer layer).
    "--disable-warning=SecurityWarning",
  ];
}
