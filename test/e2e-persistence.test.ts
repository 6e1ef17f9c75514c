// Persistence: a restart keeps the whole history; a kill -9 mid-turn leaves a failed turn with
// everything completed before the crash intact.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "./support/fake-model-server.js";
import { startHarness, text } from "./support/harness.js";

type Item = { id: string; type: string; status: string; payload: Record<string, unknown> };
type Turn = { id: string; status: string; error?: { code: string }; items: Item[] };

describe("restart", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  it("thread/list, thread/read and thread/resume return the full history after a restart", async () => {
    const first = await startHarness({ fake });
    fake.enqueue({ kind: "response", text: "remembered answer" });
    const threadId = await first.startThread({ displayName: "Persistent" });
    await first.client.call("thread/rename", { threadId, displayName: "Renamed" });
    await first.client.call("turn/start", { threadId, input: text("remember this") });
    await first.client.turnEnd(threadId);
    const before = (await first.client.call("thread/read", { threadId })).thread as { turns: Turn[] };
    await first.server.kill("SIGTERM");

    const second = await startHarness({ fake, dataDir: first.server.dataDir });
    try {
      const list = await second.client.call("thread/list", {});
      const listed = (list.data as Array<{ id: string; displayName: string }>).find((t) => t.id === threadId);
      assert.equal(listed?.displayName, "Renamed");
      const read = (await second.client.call("thread/read", { threadId })).thread as { turns: Turn[] };
      assert.deepEqual(read.turns, before.turns);
      const resumed = (await second.client.call("thread/resume", { threadId })).thread as { turns: Turn[] };
      assert.equal(resumed.turns[0]!.items.find((i) => i.type === "agentMessage")!.payload.text, "remembered answer");

      // The resumed thread continues with its history.
      fake.enqueue({ kind: "response", text: "second" });
      const requestsBefore = fake.requests.length;
      await second.client.call("turn/start", { threadId, input: text("and now?") });
      await second.client.turnEnd(threadId);
      const body = fake.requests[requestsBefore]!.body as { messages: Array<{ role: string; content: string }> };
      assert.deepEqual(body.messages.filter((m) => m.role !== "system").map((m) => m.content), ["remember this", "remembered answer", "and now?"]);
    } finally {
      await second.close();
    }
  });

  it("kill -9 mid-turn: the turn is marked failed at restart and completed items survive", async () => {
    const first = await startHarness({ fake });
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "call_ls", name: "list_files", arguments: {} }] },
      { kind: "response", text: ["streamed ", "before ", "the crash"], holdOpen: true },
    );
    const threadId = await first.startThread();
    const started = await first.client.call("turn/start", { threadId, input: text("work") });
    const turnId = (started.turn as { id: string }).id;
    await first.client.notification("item/agentMessage/delta", (p) => p.delta === "the crash");
    await first.server.kill("SIGKILL");

    const second = await startHarness({ fake, dataDir: first.server.dataDir });
    try {
      const read = (await second.client.call("thread/read", { threadId })).thread as { turns: Turn[]; runtime: { running: boolean } };
      const turn = read.turns.find((t) => t.id === turnId)!;
      assert.equal(turn.status, "failed");
      assert.equal(turn.error?.code, "serverRestarted");
      assert.equal(read.runtime.running, false);
      const types = turn.items.map((i) => i.type);
      assert.ok(types.includes("userMessage"));
      assert.ok(types.includes("toolCall"));
      const result = turn.items.find((i) => i.type === "toolResult")!;
      assert.equal(result.status, "completed");
      assert.equal(result.payload.success, true);
      assert.ok(turn.items.every((i) => i.status === "completed"));
      // A new turn on the same thread works.
      fake.enqueue({ kind: "response", text: "recovered" });
      await second.client.call("turn/start", { threadId, input: text("again") });
      assert.equal((await second.client.turnEnd(threadId)).method, "turn/completed");
    } finally {
      await second.close();
    }
  });
});
