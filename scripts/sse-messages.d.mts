// The types of scripts/sse-messages.mjs, for the tests that import it.
export interface SseMessage {
  id?: string;
  event?: string;
  /** The message's `data:` lines, joined with newlines. */
  data: string;
}

export class SseMessages {
  /** The messages that `chunk` completes, in order (the rest waits for the next chunk). */
  push(chunk: string | Uint8Array): SseMessage[];
}

/** Every message of a stream's body, to its end, each passed to `onMessage` as it arrives. */
export function readSseMessages(body: AsyncIterable<Uint8Array | string>, onMessage: (message: SseMessage) => void): Promise<void>;
