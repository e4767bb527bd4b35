import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeReply {
  text?: string;
  toolCalls?: { id: string; name: string; args: Record<string, unknown> }[];
  /** Answer with this HTTP error status (and `headers`, e.g. Retry-After) instead of a completion. */
  status?: number;
  headers?: Record<string, string>;
  /** The error's message with `status` (default "fake provider error <status>"). */
  errorMessage?: string;
  /** Token counts reported in `usage` (default 11 in, 7 out). */
  usage?: { input: number; output: number };
  /** Streaming only: after this many 5-character pieces of `text`, wait for `until` before sending the rest. */
  hold?: { afterPieces: number; until: Promise<void> };
}

/**
 * A real OpenAI-compatible HTTP server on loopback: answers /chat/completions with the given replies
 * in order (streaming or not, as the request asks) and records every request body.
 */
export async function startOpenAIServer(
  replies: FakeReply[],
  options: { afterReplies?: FakeReply } = {},
): Promise<{ url: string; requests: any[]; times: number[]; close(): Promise<void> }> {
  const requests: any[] = [];
  /** When each request arrived (Date.now()). */
  const times: number[] = [];
  let next = 0;
  const server: Server = createServer(async (req, res) => {
    const body = JSON.parse(await read(req));
    requests.push(body);
    times.push(Date.now());
    const reply = replies[next++] ?? options.afterReplies ?? { text: "(no more replies)" };
    if (reply.status !== undefined) {
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(JSON.stringify({ error: { message: reply.errorMessage ?? `fake provider error ${reply.status}`, type: "fake_error" } }));
      return;
    }
    const toolCalls = (reply.toolCalls ?? []).map((c, index) => ({
      index,
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: JSON.stringify(c.args) },
    }));
    const finish = toolCalls.length ? "tool_calls" : "stop";
    const input = reply.usage?.input ?? 11;
    const output = reply.usage?.output ?? 7;
    const usage = { prompt_tokens: input, completion_tokens: output, total_tokens: input + output };
    if (body.stream) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta: object, finish_reason: string | null, extra: object = {}) =>
        res.write(
          `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`,
        );
      const pieces = reply.text?.match(/.{1,5}/gs) ?? [];
      for (const [index, piece] of pieces.entries()) {
        if (reply.hold && index === reply.hold.afterPieces) await reply.hold.until;
        chunk({ role: "assistant", content: piece }, null);
      }
      if (toolCalls.length) chunk({ role: "assistant", tool_calls: toolCalls }, null);
      chunk({}, finish, { usage });
      res.end("data: [DONE]\n\n");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "x",
        object: "chat.completion",
        created: 1,
        model: body.model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: reply.text ?? null,
              ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _i, ...c }) => c) } : {}),
            },
            finish_reason: finish,
          },
        ],
        usage,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    times,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (data += c));
    req.on("end", () => resolve(data));
    req.on("error", reject);
  });
}
