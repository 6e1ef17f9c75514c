// thread/pause, thread/archive and their inverses; broadcasts of configuration and mode changes
// to every subscriber, over stdio with a second client on WebSocket.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startHarness, text, type Harness } from "../support/harness.js";
import { ServerProcess } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";

type Thread = { id: string; status: string; queuedInputs: unknown[] };
const NOT_ACTIVE = -32011;

describe("pause and archive", () => {
  let h: Harness;
  let other: TestClient; // a second connection, over WebSocket
  before(async () => {
    h = await startHarness({ args: ["--listen", "stdio://", "--listen", "ws://127.0.0.1:0"] });
    other = await TestClient.overWebSocket(await h.server.websocketUrl());
    await other.initialize();
  });
  after(async () => {
    other.close();
    await h.close();
  });

  it("a paused thread refuses turns with -32011, keeps its queue, and unpause starts the next input", async () => {
    const threadId = await h.startThread();
    await other.call("thread/subscribe", { threadId });
    const paused = (await h.client.call("thread/pause", { threadId })).thread as Thread;
    assert.equal(paused.status, "paused");
    const change = await other.notification("thread/statusChanged", (p) => p.threadId === threadId);
    assert.equal(change.status, "paused");
    assert.equal(typeof change.seq, "number");

    const refused = await h.client.request("turn/start", { threadId, input: text("now?") });
    assert.equal(refused.error?.code, NOT_ACTIVE);
    assert.match(refused.error!.message, /paused/);

    // Enqueued input waits while paused.
    const queued = await h.client.call("turn/enqueue", { threadId, input: text("later") });
    assert.equal(queued.turn, undefined);
    assert.equal((queued.queuedInputs as unknown[]).length, 1);
    const read = (await h.client.call("thread/read", { threadId, includeTurns: true })).thread as Thread & { turns: unknown[] };
    assert.equal(read.turns.length, 0, "no turn started while paused");
    assert.equal(read.queuedInputs.length, 1);

    h.fake.enqueue({ kind: "response", text: "ran after unpause" });
    const unpaused = (await h.client.call("thread/unpause", { threadId })).thread as Thread;
    assert.equal(unpaused.status, "active");
    const end = await h.client.turnEnd(threadId);
    assert.equal(end.method, "turn/completed");
    const turn = end.params!.turn as { input: Array<{ text: string }> };
    assert.equal(turn.input[0]!.text, "later");
    await other.notification("thread/statusChanged", (p) => p.threadId === threadId && p.status === "active");
  });

  it("pause lets a running turn finish but starts nothing queued behind it", async () => {
    const threadId = await h.startThread();
    h.fake.enqueue({ kind: "response", text: ["slow ", "answer"], chunkDelayMs: 150 });
    const turn = (await h.client.call("turn/start", { threadId, input: text("first") })).turn as { id: string };
    await h.client.call("turn/enqueue", { threadId, input: text("second") });
    await h.client.call("thread/pause", { threadId });
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");
    const read = (await h.client.call("thread/read", { threadId })).thread as Thread & { turns: unknown[] };
    assert.equal(read.turns.length, 1);
    assert.equal(read.queuedInputs.length, 1, "the queued input waits");
  });

  it("an archived thread is hidden from thread/list unless asked for, and refuses turns", async () => {
    const threadId = await h.startThread({ displayName: "to archive" });
    const visible = await h.startThread({ displayName: "stays" });
    const archived = (await h.client.call("thread/archive", { threadId })).thread as Thread;
    assert.equal(archived.status, "archived");
    // Sent to every connection, subscribed or not: thread lists change.
    const change = await other.notification("thread/statusChanged", (p) => p.threadId === threadId);
    assert.equal(change.status, "archived");

    const ids = async (params: Record<string, unknown>) =>
      ((await h.client.call("thread/list", { limit: 500, ...params })).data as Thread[]).map((t) => t.id);
    const plain = await ids({});
    assert.ok(plain.includes(visible) && !plain.includes(threadId));
    assert.ok((await ids({ includeArchived: true })).includes(threadId));
    const onlyArchived = await ids({ status: "archived" });
    assert.ok(onlyArchived.includes(threadId) && !onlyArchived.includes(visible));

    const refused = await h.client.request("turn/start", { threadId, input: text("hi") });
    assert.equal(refused.error?.code, NOT_ACTIVE);
    assert.equal((await h.client.request("thread/pause", { threadId })).error?.code, NOT_ACTIVE);

    const back = (await h.client.call("thread/unarchive", { threadId })).thread as Thread;
    assert.equal(back.status, "active");
    assert.ok((await ids({})).includes(threadId));
  });

  it("archive cancels a running turn", async () => {
    const threadId = await h.startThread();
    h.fake.enqueue({ kind: "response", text: "streaming", holdOpen: true });
    const turn = (await h.client.call("turn/start", { threadId, input: text("long") })).turn as { id: string };
    await h.client.notification("item/agentMessage/delta", (p) => p.turnId === turn.id);
    const archived = (await h.client.call("thread/archive", { threadId })).thread as Thread & { runtime: { running: boolean } };
    assert.equal(archived.status, "archived");
    assert.equal(archived.runtime.running, false);
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/cancelled");
  });

  it("thread/config/update and thread/mode/set reach every subscriber with the new value", async () => {
    const threadId = await h.startThread();
    await other.call("thread/subscribe", { threadId });
    await h.client.call("thread/config/update", { threadId, configuration: { systemPrompt: "Be brief." } });
    const config = await other.notification("thread/configUpdated", (p) => p.threadId === threadId);
    assert.equal((config.configuration as { systemPrompt?: string }).systemPrompt, "Be brief.");
    assert.equal(typeof config.seq, "number");
    await h.client.call("thread/mode/set", { threadId, mode: "plan" });
    const mode = await other.notification("thread/modeChanged", (p) => p.threadId === threadId);
    assert.equal(mode.mode, "plan");
    assert.ok((mode.seq as number) > (config.seq as number));
  });
});

describe("pause and archive survive a restart", () => {
  it("statuses and the hidden archive are read back from the log", async () => {
    const first = await startHarness();
    const paused = await first.startThread();
    const archived = await first.startThread();
    await first.client.call("thread/pause", { threadId: paused });
    await first.client.call("thread/archive", { threadId: archived });
    const dataDir = first.server.dataDir;
    first.client.close();
    await first.server.kill();

    const second = ServerProcess.spawn({ dataDir });
    const client = TestClient.overStdio(second.child);
    try {
      await client.initialize();
      const list = (await client.call("thread/list", { includeArchived: true })).data as Thread[];
      assert.equal(list.find((t) => t.id === paused)?.status, "paused");
      assert.equal(list.find((t) => t.id === archived)?.status, "archived");
      const plain = (await client.call("thread/list", {})).data as Thread[];
      assert.equal(
        plain.some((t) => t.id === archived),
        false,
      );
      assert.equal((await client.request("turn/start", { threadId: paused, input: text("hi") })).error?.code, NOT_ACTIVE);
    } finally {
      client.close();
      await second.kill();
      await first.fake.close();
    }
  });
});
