// The `fetch` handed to the model SDKs: `httpFetch`, with a streamed (SSE) body cut into one
// chunk per event.
//
// Why: both SDKs find events by appending each network chunk to a buffer and then, for every
// event in it, slicing off the event and *copying the rest of the buffer*. A 64 KiB chunk
// holding 400 small deltas is copied 400 times (about 13 MB of short-lived ArrayBuffers), which
// happens exactly when the server is busiest (the socket has filled up while we were working).
// Handing over one event per chunk makes that step linear. Any cut point is valid to the SDK:
// it only changes where its buffer starts, never what it parses.

import { httpFetch } from "./http-fetch.js";

const NEWLINE = 0x0a;
const RETURN = 0x0d;

export const eventChunkedFetch: typeof fetch = async (input, init) => {
  const response = await httpFetch(input, init);
  const type = response.headers.get("content-type") ?? "";
  if (!response.body || !type.startsWith("text/event-stream")) return response;
  return new Response(cutAtEvents(response.body), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

/** Re-chunks a byte stream right after each blank line ("\n\n" or "\n\r\n"). */
export function cutAtEvents(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        let start = 0;
        for (let i = value.indexOf(NEWLINE); i !== -1; i = value.indexOf(NEWLINE, i + 1)) {
          const end = value[i + 1] === NEWLINE ? i + 2 : value[i + 1] === RETURN && value[i + 2] === NEWLINE ? i + 3 : -1;
          if (end === -1) continue;
          controller.enqueue(value.subarray(start, end));
          start = end;
          i = end - 1;
        }
        if (start < value.length) controller.enqueue(value.subarray(start));
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Pull only when the SDK asks: the socket, not this stream, holds what is not read yet.
    { highWaterMark: 0 },
  );
}
