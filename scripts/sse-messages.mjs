// Server-sent events read incrementally, for the tests and bench scripts that follow hookbox's streams. The
// server writes each message as `id:`/`event:`/`data:` lines ending in a blank line; a message's `data:` lines
// are joined with newlines, and a message without data (a comment or a bare id) is skipped.

export class SseMessages {
  #decoder = new TextDecoder();
  #buffer = "";

  /** The messages that `chunk` completes, in order (the rest waits for the next chunk). */
  push(chunk) {
    // Only the new text is searched for a message's end: a big event arriving in many chunks is scanned once.
    const searchFrom = Math.max(0, this.#buffer.length - 1);
    this.#buffer += typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    const messages = [];
    for (let end = this.#buffer.indexOf("\n\n", searchFrom); end >= 0; end = this.#buffer.indexOf("\n\n")) {
      const message = parseMessage(this.#buffer.slice(0, end));
      this.#buffer = this.#buffer.slice(end + 2);
      if (message !== undefined) messages.push(message);
    }
    return messages;
  }
}

function parseMessage(block) {
  const data = [];
  let id;
  let event;
  for (const line of block.split("\n")) {
    if (line.startsWith("data: ")) data.push(line.slice(6));
    else if (line.startsWith("id: ")) id = line.slice(4);
    else if (line.startsWith("event: ")) event = line.slice(7);
  }
  if (data.length === 0) return undefined;
  return { ...(id === undefined ? {} : { id }), ...(event === undefined ? {} : { event }), data: data.join("\n") };
}

/** Every message of a stream's body, to its end, each passed to `onMessage` as it arrives. */
export async function readSseMessages(body, onMessage) {
  const messages = new SseMessages();
  for await (const chunk of body) for (const message of messages.push(chunk)) onMessage(message);
}
