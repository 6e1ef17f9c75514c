// Persistence: a restart keeps the whole history; a kill -9 mid-turn leaves a failed turn with
// everything completed before the crash intact.
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import type { WireThread } from "../../src/client/index.js";
import { itemsOf, ModelScript, startTypedHarness } from "../support/typed-harness.js";

describe("restart", () => {
  let model: ModelScript;
  before(async () => {
    model = await ModelScript.start();
  });
  afterEach(() => model.assertConsumed());
  after(() => model.fake.close());

  it("thread/list, thread/read and thread/resume return the full history after a restart", async () => {
    const first = await startTypedHarness({ model });
    let threadId: string;
    let beforeRestart: WireThread;
    try {
      model.enqueue({ kind: "response", text: "remembered answer" });
      threadId = await first.startThread({ displayName: "Persistent" });
      await first.client.request("thread/rename", { threadId, displayName: "Renamed" });
      await first.runTurn(threadId, "remember this");
      beforeRestart = (await first.client.readThread(threadId)).thread;
    } finally {
      await first.close(); // SIGTERM, and waits until the server has exited
    }

    const second = await startTypedHarness({ model, dataDir: first.dataDir });
    try {
      const list = await second.client.request("thread/list", {});
      const listed = list.data.find((t) => t.id === threadId);
      assert.equal(listed?.displayName, "Renamed");
      const read = (await second.client.readThread(threadId)).thread;
      assert.deepEqual(read.turns, beforeRestart.turns);
      const resumed = (await second.client.request("thread/resume", { threadId })).thread;
      assert.equal(itemsOf(resumed.turns![0]!.items!, "agentMessage")[0]!.payload.text, "remembered answer");

      // The resumed thread continues with its history.
      model.enqueue({ kind: "response", text: "second" });
      const requestsBefore = model.fake.requests.length;
      await second.runTurn(threadId, "and now?");
      const body = model.fake.requests[requestsBefore]!.body as { messages: Array<{ role: string; content: string }> };
      assert.deepEqual(
        body.messages.filter((m) => m.role !== "system").map((m) => m.content),
        ["remember this", "remembered answer", "and now?"],
      );
    } finally {
      await second.close();
    }
  });

  it("kill -9 mid-turn: the turn is marked failed at restart and completed items survive", async () => {
    const first = await startTypedHarness({ model });
    let threadId: string;
    let turnId: string;
    try {
      model.enqueue(
        { kind: "response", toolCalls: [{ id: "call_ls", name: "list_files", arguments: {} }] },
        { kind: "response", text: ["streamed ", "before ", "the crash"], holdOpen: true },
      );
      threadId = await first.startThread();
      turnId = await first.startTurn(threadId, "work");
      await first.notification("item/agentMessage/delta", (p) => p.delta === "the crash");
      await first.crashServer();
    } finally {
      await first.close();
    }

    const second = await startTypedHarness({ model, dataDir: first.dataDir });
    try {
      const read = (await second.client.readThread(threadId)).thread;
      const turn = read.turns!.find((t) => t.id === turnId)!;
      assert.equal(turn.status, "failed");
      assert.equal(turn.error?.code, "serverRestarted");
      assert.equal(read.runtime.running, false);
      const items = turn.items!;
      const types = items.map((i) => i.type);
      assert.ok(types.includes("userMessage"));
      assert.ok(types.includes("toolCall"));
      const result = itemsOf(items, "toolResult")[0]!;
      assert.equal(result.status, "completed");
      assert.equal(result.payload.success, true);
      assert.ok(items.every((i) => i.status === "completed"));
      // A new turn on the same thread works.
      model.enqueue({ kind: "response", text: "recovered" });
      assert.equal((await second.runTurn(threadId, "again")).method, "turn/completed");
    } finally {
      await second.close();
    }
  });
});
