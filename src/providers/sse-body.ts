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
 * A node stream (the HTTP response) as the SDKs read a body, cut at events: the socket's chunks
 * are cut as they arrive, and the socket is paused while the SDK has enough queued.
 *
 * An async iterator, not a web `ReadableStream`: both SDKs read a body through its async
 * iterator when it has one, and a web stream's own (its reader, its queue, the promises of each
 * read) cost 5-10 µs more a delta (67 streams at a model's pace, the SDK's parsing included: a
 * median 60-66 µs of CPU a delta against 70-75). `cancel` is there for callers that would
 * cancel a web stream's body.
 *
 * It also pauses after reading for `READ_BUDGET_MS` (or all responses together for
 * `SHARED_READ_BUDGET_MS`) and goes on at the event loop's next turn. A response that arrives
 * faster than it is handled (a local model, a burst after a stall) is otherwise read to its end
 * without the loop ever turning (libuv reads a readable socket many times in one go, and each
 * read's events are handled in microtasks), and what waits for the loop, the store's commit and
 * so delivery to clients, waits for the whole response.
 */
export class EventStreamBody implements AsyncIterableIterator<Uint8Array> {
  private readonly queue: Uint8Array[] = [];
  /** The reader waiting for the next event, when the queue is empty. */
  private reader: { resolve(result: IteratorResult<Uint8Array>): void; reject(error: unknown): void } | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;
  /** When this response's reading began in the current reading turn (a model that streams at its pace never reaches the budget). */
  private readingSince = 0;
  private turn = 0;
  private resuming = false;

  constructor(private readonly source: Readable) {
    source.on("data", (chunk: Buffer) => this.received(chunk));
    source.once("end", () => {
      this.ended = true;
      this.answer();
    });
    // What is queued is dropped, as a web stream drops it: a failure is most often the turn's
    // abort (an interrupt, a thread another node took), and nothing more of it may be handled.
    source.once("error", (error) => {
      this.failure = { error };
      this.queue.length = 0;
      this.answer();
    });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    const piece = this.queue.shift();
    if (piece) {
      if (this.source.isPaused() && this.queue.length < QUEUED_EVENTS) this.resumeNextTurn();
      return Promise.resolve({ value: piece, done: false });
    }
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.reader = { resolve, reject }));
  }

  /** The reader stops early (a turn interrupted): the response is not read further. */
  return(): Promise<IteratorResult<Uint8Array>> {
    this.source.destroy();
    return Promise.resolve({ value: undefined, done: true });
  }

  cancel(reason?: unknown): Promise<void> {
    this.source.destroy(reason instanceof Error ? reason : undefined);
    return Promise.resolve();
  }

  private received(chunk: Buffer): void {
    const current = readingTurnNow();
    if (this.turn !== current) {
      this.turn = current;
      this.readingSince = performance.now();
    }
    cutEvents(chunk, this.enqueue);
    const now = performance.now();
    if (this.queue.length >= QUEUED_EVENTS)
      this.source.pause(); // the next read resumes it
    else if (now - this.readingSince > READ_BUDGET_MS || now - allReadingSince > SHARED_READ_BUDGET_MS) {
      this.source.pause();
      this.resumeNextTurn();
    }
  }

  private readonly enqueue = (piece: Uint8Array): void => {
    const reader = this.reader;
    this.reader = undefined;
    if (reader) reader.resolve({ value: piece, done: false });
    else this.queue.push(piece);
  };

  /** The waiting reader learns of the end or the failure. */
  private answer(): void {
    const reader = this.reader;
    if (!reader) return;
    this.reader = undefined;
    if (this.failure) reader.reject(this.failure.error);
    else reader.resolve({ value: undefined, done: true });
  }

  private resumeNextTurn(): void {
    if (this.resuming) return;
    this.resuming = true;
    setImmediate(() => {
      this.resuming = false;
      if (this.queue.length < QUEUED_EVENTS) this.source.resume(); // else the next read resumes it
    });
  }
}

/** A `Response` whose body is `source` as an `EventStreamBody` (which the SDKs read as they read a web stream). */
export function eventStreamResponse(source: Readable, init: ResponseInit): Response {
  const response = new Response(null, init);
  Object.defineProperty(response, "body", { value: new EventStreamBody(source) });
  return response;
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
