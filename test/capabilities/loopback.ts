import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/*
 * A loopback HTTP server the capability tests fetch from. It records every request it receives (method,
 * path, headers) and answers by path:
 *   /api/ok            {"verdict":"fine"}
 *   /api/echo          the request's headers as JSON (an echoing service: the host must redact secrets)
 *   /api/redirect-in   302 to /api/ok (inside the egress list)
 *   /api/redirect-out  302 to /outside/x (outside it)
 *   /api/big           2 MiB of text, streamed
 *   /api/slow          answers after 3 s
 *   anything else      200 "outside"
 */

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface Loopback {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

export async function startLoopback(): Promise<Loopback> {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    const path = request.url ?? "/";
    received.push({ method: request.method ?? "GET", path, headers: request.headers });
    request.resume();
    if (path === "/api/ok") {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ verdict: "fine" }));
    } else if (path === "/api/echo") {
      response.writeHead(200, { "content-type": "application/json", "x-echo-auth": String(request.headers.authorization) });
      response.end(JSON.stringify(request.headers));
    } else if (path === "/api/redirect-in") {
      response.writeHead(302, { location: "/api/ok" }).end();
    } else if (path === "/api/redirect-out") {
      response.writeHead(302, { location: "/outside/x" }).end();
    } else if (path === "/api/big") {
      response.writeHead(200, { "content-type": "text/plain" });
      const chunk = "x".repeat(64 * 1024);
      let sent = 0;
      const pump = () => {
        while (sent < 32) {
          sent++;
          if (!response.write(chunk)) return void response.once("drain", pump);
        }
        response.end();
      };
      pump();
    } else if (path === "/api/slow") {
      setTimeout(() => response.writeHead(200).end("late"), 3000).unref();
    } else {
      response.writeHead(200).end("outside");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
