// A server connection's frames sent in one go leave in one write: the socket is corked on the
// first and uncorked once the microtask queue is done, or after 64 KiB.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { WebSocket } from "ws";
import { silentLogger } from "../../src/log.js";
import { createWebSocketChannel } from "../../src/transport/websocket-channel.js";

function fixture(): { sent: string[]; calls: string[]; ws: { bufferedAmount: number }; send(m: string): void } {
  const sent: string[] = [];
  const calls: string[] = [];
  // Only what the channel uses of a WebSocket: its state, its output and its events.
  const ws = { readyState: WebSocket.OPEN, bufferedAmount: 0, send: (m: string) => void sent.push(m), on: () => ws };
  const socket = { cork: () => void calls.push("cork"), uncork: () => void calls.push("uncork") };
  const channel = createWebSocketChannel(ws as unknown as WebSocket, { remote: "test", maxMessageBytes: 1024, log: silentLogger, socket });
  return { sent, calls, ws, send: (m) => channel.send(m) };
}

test("frames sent in one go are written together", async () => {
  const { sent, calls, send } = fixture();
  for (let i = 0; i < 5; i++) send(`m${i}`);
  assert.deepEqual(calls, ["cork"], "corked once, not yet written");
  await Promise.resolve();
  assert.deepEqual(calls, ["cork", "uncork"]);
  assert.deepEqual(sent, ["m0", "m1", "m2", "m3", "m4"]);
  send("later");
  assert.deepEqual(calls, ["cork", "uncork", "cork"], "the next go is corked again");
});

test("a long run is written every 64 KiB, not held", () => {
  const { calls, ws, send } = fixture();
  send("first");
  ws.bufferedAmount = 64 * 1024 + 1;
  send("second");
  assert.deepEqual(calls, ["cork", "uncork", "cork"]);
});
