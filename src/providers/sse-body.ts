// The body of an event stream (SSE) as the model SDKs get it: one chunk per event.
//
// Why: both SDKs find events by appending each network chunk to a buffer and then, for every
// event in it, slicing off the event and *copying the rest of the buffer*. A 64 KiB chunk
// holding 400 small deltas is copied 400 times (about 13 MB of short-lived ArrayBuffers), which
// happens exactly when the server is busiest (the socket has filled up while we were working).
// Handing over one event per chunk makes that step linear. Any cut point is valid to the SDK:
// it only changes where its buffer starts, never what it parses.
import type { Readable } from "node:stream";

const NEWLINE = 0x0a;
const RETURN = 0x0d;
/** Events queued for the SDK before the socket is paused. */
const QUEUED_EVENTS = 256;
/** How long a response is read before the event loop gets a turn. */
const READ_BUDGET_MS = 4;
/**
 * How long all responses together are read before it does. A server streaming 67 turns at once
 * otherwise spent up to 67 × 4 ms on model input in one turn of the loop, before any timer,
 * commit or other client's request (the cluster bench, all at once: a watcher's copy came a
 * median 218 ms after the owner's client's).
 */
const SHARED_READ_BUDGET_MS = 12;
/**
 * The turn of the event loop in which responses are being read, counted, and when that reading
 * began. One timer per turn marks its end for every response (each response had its own, a
 * second setImmediate per network read at a model's pace).
 */
let readingTurn = 0;
let readingTurnOpen = false;
let allReadingSince = 0;

/** The current reading turn's number, opening one (and starting the shared budget) if none is open. */
function readingTurnNow(): number {
  if (!readingTurnOpen) {
    readingTurnOpen = true;
    readingTurn++;
    allReadingSince = performance.now();
    setImmediate(() => (readingTurnOpen = false));
  }
  return readingTurn;
}

/** Calls `emit` with the pieces of `chunk` cut right after each blank line ("\n\n" or "\n\r\n"). */
export function cutEvents(chunk: Uint8Array, emit: (piece: Uint8Array) => void): void {
  let start = 0;
  for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) {
    const end = chunk[i + 1] === NEWLINE ? i + 2 : chunk[i + 1] === RETURN && chunk[i + 2] === NEWLINE ? i + 3 : -1;
    if (end === -1) continue;
    emit(chunk.subarray(start, end));
    start = end;
    i = end - 1;
  }
  if (start < chunk.length) emit(chunk.subarray(start));
}

/**
 * A node stream (the HTTP response) as a web stream cut at events, in one layer: the socket's
 * chunks are cut as they arrive, and the socket is paused while the SDK has enough queued.
 *
 * It also pauses after reading for `READ_BUDGET_MS` (or all responses together for
 * `SHARED_READ_BUDGET_MS`) and goes on at the event loop's next turn. A response that arrives
 * faster than it is handled (a local model, a burst after a stall) is otherwise read to its end
 * without the loop ever turning (libuv reads a readable socket many times in one go, and each
 * read's events are handled in microtasks), and what waits for the loop, the store's commit and
 * so delivery to clients, waits for the whole response.
 */
export function eventStreamBody(source: Readable): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  /** When this response's reading began in the current reading turn (a model that streams at its pace never reaches the budget). */
  let readingSince = 0;
  let turn = 0;
  let resuming = false;
  const resumeNextTurn = (): void => {
    if (resuming) return;
    resuming = true;
    setImmediate(() => {
      resuming = false;
      if ((controller.desiredSize ?? 1) > 0) source.resume(); // else the next pull resumes
    });
  };
  const enqueue = (piece: Uint8Array): void => controller.enqueue(piece);
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        source.on("data", (chunk: Buffer) => {
          const current = readingTurnNow();
          if (turn !== current) {
            turn = current;
            readingSince = performance.now();
          }
          cutEvents(chunk, enqueue);
          const now = performance.now();
          if ((controller.desiredSize ?? 1) <= 0) source.pause();
          else if (now - readingSince > READ_BUDGET_MS || now - allReadingSince > SHARED_READ_BUDGET_MS) {
            source.pause();
            resumeNextTurn();
          }
        });
        source.once("end", () => controller.close());
        source.once("error", (error) => controller.error(error));
      },
      pull: resumeNextTurn,
      cancel: (reason) => void source.destroy(reason instanceof Error ? reason : undefined),
    },
    new CountQueuingStrategy({ highWaterMark: QUEUED_EVENTS }),
  );
}

/** The same cut for a web stream (a response of the platform's fetch). */
export function cutAtEvents(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        cutEvents(value, (piece) => controller.enqueue(piece));
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Pull only when the SDK asks: the socket, not this stream, holds what is not read yet.
    { highWaterMark: 0 },
  );
}
