import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { IncomingHttpHeaders } from "node:http";

/** A request the loopback server received. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface Loopback {
  url: string;
  received(): Promise<Received[]>;
  clear(): Promise<void>;
  close(): Promise<void>;
}

/** Starts loopback-server.mjs in its own process on 127.0.0.1 (a free port). */
export async function startLoopback(): Promise<Loopback> {
  const child: ChildProcess = fork(join(import.meta.dirname, "loopback-server.mjs"), [], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("\n")) resolve(Number(out.trim()));
    });
    child.once("exit", (code) => reject(new Error(`loopback server exited (${code})`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    received: async () => (await (await fetch(`${url}/__received`)).json()) as Received[],
    clear: async () => void (await fetch(`${url}/__received`, { method: "DELETE" })),
    close: async () => {
      child.kill();
    },
  };
}
