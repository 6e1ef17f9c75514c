// The log is the buffer: a client that stops reading costs the server a bounded amount of
// output (its budget), catches up from the event log when it reads again, and sees every event
// exactly once, in order. A WebSocket client that reads nothing for the stall timeout is closed.
// Real processes: the built CLI, a stdio client and WebSocket clients, the fake model server.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { modelEnv, makeWorkspace, text, threadStartParams } from "../support/harness.js";
import { ServerProcess } from "../support/server-process.js";
import { FULL_CAPABILITIES, TestClient } from "../support/test-client.js";

const BUDGET = 64 * 1024;
const DELTAS = 20_000;
/** Long enough that the turn's output (~8 MB) is far more than loopback TCP buffers hold. */
const PAD = "x".repeat(300);

/** The turn's text deltas as one client saw them, checked for order and duplicates by seq. */
function seenBy(client: TestClient, threadId: string): { text: string; seqs: number[] } {
  const events = client.received.filter((m) => m.method !== undefined && m.id === undefined && m.params?.threadId === threadId);
  const seqs = events.map((m) => m.params!.seq as number);
  const deltas = events.filter((m) => m.method === "item/agentMessage/delta").map((m) => m.params!.delta as string);
  return { text: deltas.join(""), seqs };
}

function assertInOrderOnce(seqs: number[]): void {
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, `seq ${seqs[i]} after ${seqs[i - 1]}: out of order or repeated`);
}

describe("a client that stops reading", () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let url: string;
  const expected = Array.from({ length: DELTAS }, (_, i) => `d${i}${PAD} `);
  before(async () => {
    fake = await FakeModelServer.start();
    server = ServerProcess.spawn({
      args: ["--listen", "stdio://", "--listen", "ws://127.0.0.1:0", "--output-budget-bytes", String(BUDGET)],
      env: modelEnv(fake),
    });
    url = await server.websocketUrl();
  });
  after(async () => {
    await server.kill();
    await fake.close();
  });

  for (const transport of ["stdio", "websocket"] as const) {
    it(`over ${transport}: falls behind with its output bounded by the budget, then gets every event in order`, async () => {
      const stalled = transport === "stdio" ? TestClient.overStdio(server.child) : await TestClient.overWebSocket(url);
      await stalled.initialize(FULL_CAPABILITIES);
      const observer = await TestClient.overWebSocket(url);
      await observer.initialize(FULL_CAPABILITIES);
      try {
        const thread = await stalled.call("thread/start", threadStartParams(makeWorkspace()));
        const threadId = (thread.thread as { id: string }).id;
        await observer.call("thread/subscribe", { threadId });
        fake.enqueue({ kind: "response", text: expected });
        await stalled.call("turn/start", { threadId, input: text("stream a lot") });
        const pausedAt = Date.now();
        stalled.pause();
        // The other client is not slowed: it sees the whole turn while the first one reads nothing.
        await observer.waitFor((m) => m.method === "turn/completed" && m.params?.threadId === threadId, 60_000);
        const behind = await server.waitForLog(
          (l) => l.msg === "client fell behind; catching it up from the event log" && Number(l.time) >= pausedAt,
        );
        // Bounded: the server stopped queueing at its budget (plus the messages of one tick).
        assert.ok(Number(behind.pendingBytes) < BUDGET * 4, `pending output ${String(behind.pendingBytes)} bytes`);
        stalled.resume();
        await stalled.waitFor((m) => m.method === "turn/completed" && m.params?.threadId === threadId, 60_000);
        const got = seenBy(stalled, threadId);
        assert.equal(got.text, expected.join(""), "every delta, in order");
        assertInOrderOnce(got.seqs);
        assert.deepEqual(
          got.seqs,
          seenBy(observer, threadId).seqs.filter((s) => got.seqs.includes(s)),
          "the same events as a client that kept up",
        );
      } finally {
        observer.close();
        if (transport === "websocket") stalled.close();
      }
    });
  }
});

describe("a WebSocket client that reads nothing for the stall timeout", () => {
  it("is closed, and the others go on", async () => {
    const fake = await FakeModelServer.start();
    const server = ServerProcess.spawn({
      args: ["--listen", "ws://127.0.0.1:0", "--output-budget-bytes", String(BUDGET), "--stall-timeout-ms", "500"],
      env: modelEnv(fake),
    });
    try {
      const url = await server.websocketUrl();
      const stalled = await TestClient.overWebSocket(url);
      const reader = await TestClient.overWebSocket(url);
      await stalled.initialize(FULL_CAPABILITIES);
      await reader.initialize(FULL_CAPABILITIES);
      const thread = await reader.call("thread/start", threadStartParams(makeWorkspace()));
      const threadId = (thread.thread as { id: string }).id;
      await stalled.call("thread/subscribe", { threadId });
      stalled.pause();
      fake.enqueue({ kind: "response", text: Array.from({ length: DELTAS }, (_, i) => `d${i}${PAD} `) });
      await reader.call("turn/start", { threadId, input: text("go") });
      await reader.waitFor((m) => m.method === "turn/completed" && m.params?.threadId === threadId, 60_000);
      const closed = await server.waitForLog((l) => l.msg === "closing a WebSocket peer that stopped reading");
      assert.equal(closed.stallTimeoutMs, 500);
      // The server still serves the reader.
      const list = await reader.call("thread/list", {});
      assert.ok(Array.isArray(list.data));
      reader.close();
    } finally {
      await server.kill();
      await fake.close();
    }
  });
});
