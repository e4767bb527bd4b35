// The loopback HTTP server of the capability tests, run as its own process (loopback.ts starts it) so the
// host process the tests measure does not also carry the server's work. Prints its port on stdout.
// It records every request (method, path, headers) and answers by path:
//   /api/ok            {"verdict":"fine"}
//   /api/echo          the request's headers as JSON (an echoing service: the host must redact secrets)
//   /api/redirect-in   302 to /api/ok (inside the egress list)
//   /api/redirect-out  302 to /outside/x (outside it)
//   /api/big           2 MiB of text, streamed
//   /api/slow          answers after 1.5 s
//   /__received        what was recorded (GET), or clears it (DELETE); the tests call it directly
//   anything else      200 "outside"
import { createServer } from "node:http";

let received = [];
const server = createServer((request, response) => {
  const path = request.url ?? "/";
  request.resume();
  if (path === "/__received") {
    if (request.method === "DELETE") received = [];
    return void response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(received));
  }
  received.push({ method: request.method, path, headers: request.headers });
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
    response.on("error", () => {});
    pump();
  } else if (path === "/api/slow") {
    setTimeout(() => response.writeHead(200).end("late"), 1500);
  } else {
    response.writeHead(200).end("outside");
  }
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
process.on("disconnect", () => process.exit(0));
