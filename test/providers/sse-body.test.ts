// The SSE body handed to the SDKs is cut after each event, and nothing else changes.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough, Readable } from "node:stream";
import { cutAtEvents, EventStreamBody } from "../../src/providers/sse-body.js";
import { httpFetch } from "../../src/providers/http-fetch.js";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (chunks: Uint8Array[]): string[] => chunks.map((c) => new TextDecoder().decode(c));

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(bytes(chunk));
      controller.close();
    },
  });
}

test("each event becomes its own chunk, across network chunks and with CRLF blank lines", async () => {
  const network = ["data: 1\n\ndata: 2\n\ndata: 3", "a\n\nevent: x\r\ndata: 4\r\n\r\n", "data: 5\n"];
  const out = text(await readAll(cutAtEvents(streamOf(network))));
  assert.deepEqual(out, ["data: 1\n\n", "data: 2\n\n", "data: 3", "a\n\n", "event: x\r\ndata: 4\r\n\r\n", "data: 5\n"]);
  assert.equal(out.join(""), network.join(""));
});

test("a node stream's events are cut alike; the socket pauses while the reader has enough queued", async () => {
  const network = ["data: 1\n\ndata: 2\n\ndata: 3", "a\n\nevent: x\r\ndata: 4\r\n\r\n", "data: 5\n"];
  const cut = text(await readAll(new EventStreamBody(Readable.from(network.map((c) => Buffer.from(c))))));
  assert.deepEqual(cut, ["data: 1\n\n", "data: 2\n\n", "data: 3", "a\n\n", "event: x\r\ndata: 4\r\n\r\n", "data: 5\n"]);

  const many = Array.from({ length: 100 }, (_, i) => Buffer.from(`data: ${i}\n\n`.repeat(10)));
  const source = Readable.from(many);
  const reader = new EventStreamBody(source);
  await new Promise((resolve) => source.once("pause", resolve));
  assert.ok(source.readableFlowing === false, "paused with nobody reading");
  let events = 0;
  while (!(await reader.next()).done) events++;
  assert.equal(events, 1_000, "every event once it is read");
});

test("a failure of the response drops the events not read yet: the next read rejects", async () => {
  const source = new PassThrough();
  const body = new EventStreamBody(source);
  source.write("data: 1\n\ndata: 2\n\n");
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(new TextDecoder().decode((await body.next()).value), "data: 1\n\n");
  source.destroy(new Error("aborted"));
  await new Promise((resolve) => source.once("close", resolve));
  await assert.rejects(body.next(), /aborted/);
});

test("a body that keeps arriving as fast as it is read lets the event loop turn every few milliseconds", async () => {
  // One event per chunk, each after the reader has taken the last, all within microtasks: as a
  // socket's many reads in one poll are. The queue never fills, so only the read budget pauses.
  async function* burst(): AsyncGenerator<Buffer> {
    for (let i = 0; i < 4_000; i++) {
      for (let k = 0; k < 50; k++) await Promise.resolve();
      yield Buffer.from(`data: ${i}\n\n`);
    }
  }
  const reader = new EventStreamBody(Readable.from(burst()));
  let read = 0;
  const turns: number[] = [];
  const watch = (): void => void setImmediate(() => (turns.push(read), read < 4_000 && watch()));
  watch();
  while (!(await reader.next()).done) read++;
  assert.equal(read, 4_000);
  assert.ok(turns.length > 1 && turns[0]! < read, `the loop turned after ${turns.slice(0, 5).join(", ")}… of ${read} events`);
});

test("bodies read at once share a budget: a loop turn holds a few times a body's budget, not one per body", async () => {
  async function* burst(): AsyncGenerator<Buffer> {
    for (let i = 0; i < 1_000; i++) {
      for (let k = 0; k < 50; k++) await Promise.resolve();
      yield Buffer.from(`data: ${i}\n\n`);
    }
  }
  /** The events read between two turns of the loop, `bodies` read at once, in turns that read any, ascending. */
  async function eventsPerTurn(bodies: number): Promise<number[]> {
    let read = 0;
    let done = 0;
    const perTurn: number[] = [];
    let last = 0;
    const watch = (): void =>
      void setImmediate(() => {
        perTurn.push(read - last);
        last = read;
        if (done < bodies) watch();
      });
    watch();
    await Promise.all(
      Array.from({ length: bodies }, async () => {
        const reader = new EventStreamBody(Readable.from(burst()));
        while (!(await reader.next()).done) read++;
        done++;
      }),
    );
    return perTurn.filter((n) => n > 0).sort((a, b) => a - b);
  }
  // The budgets are times: a turn in which the process was preempted reads less. So one body's
  // budget is its fullest turn, and 24 bodies' their median turn.
  const one = (await eventsPerTurn(1)).at(-1)!;
  const turns = await eventsPerTurn(24);
  const many = turns[Math.floor(turns.length / 2)]!;
  // The shared budget is 3 bodies' worth; a budget per body let a turn hold 24 bodies' worth.
  assert.ok(many < 5 * one, `${many} events a turn with 24 bodies, ${one} with one`);
});

test("only event streams are re-chunked; status and headers pass through", async () => {
  const server = http.createServer((req, res) => {
    if (req.url === "/sse") {
      res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "r1" });
      res.end("data: a\n\ndata: b\n\n");
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end('{"error":"no"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const sse = await httpFetch(`${base}/sse`);
    assert.equal(sse.status, 200);
    assert.equal(sse.headers.get("x-request-id"), "r1");
    assert.deepEqual(text(await readAll(sse.body!)), ["data: a\n\n", "data: b\n\n"]);
    const missing = await httpFetch(`${base}/other`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "no" });
  } finally {
    server.close();
  }
});
