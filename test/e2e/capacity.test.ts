// --max-running-turns: a turn over the limit is started (its client has the answer) and runs
// only once a running turn has ended; one interrupted while it waits ends without running.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

describe("--max-running-turns", () => {
  let h: TypedHarness;
  before(async () => (h = await startTypedHarness({ args: ["--max-running-turns", "1"] })));
  after(() => h?.close());

  it("runs a turn over the limit once the running one ends, and cancels one interrupted while it waits", async () => {
    const [a, b, c] = [await h.startThread(), await h.startThread(), await h.startThread()];
    // What the client hears: [method, threadId, params]. Each thread's events come in order;
    // two threads' may cross (docs/client.md), so the order between threads is the server's
    // timestamps.
    const heard: Array<[string, string, Record<string, unknown>]> = [];
    h.client.onEvent((event) => {
      const params = (event as { params?: { threadId?: unknown } }).params;
      if (typeof params?.threadId === "string") heard.push([event.method, params.threadId, params]);
    });
    h.model.enqueue({ kind: "response", text: ["a", " holds"], holdOpen: true }, { kind: "response", text: "b ran" });
    const turnA = await h.startTurn(a, "hold the slot");
    await h.client.waitFor("item/agentMessage/delta", (p) => p.threadId === a && p.delta === " holds");
    const turnB = await h.startTurn(b, "wait for it");
    const turnC = await h.startTurn(c, "give up waiting");

    const cancelledC = await h.client.request("turn/interrupt", { threadId: c });
    assert.equal(cancelledC.turn.status, "cancelled");
    await h.client.request("turn/interrupt", { threadId: a });
    assert.equal((await h.client.turnEnd(turnA)).method, "turn/cancelled");
    assert.equal((await h.client.turnEnd(turnB)).method, "turn/completed");
    assert.equal((await h.client.turnEnd(turnC)).method, "turn/cancelled");

    const firstItemOf = (threadId: string) => heard.find(([method, t]) => method === "item/started" && t === threadId)?.[2];
    const endOfA = heard.find(([method, t]) => method === "turn/cancelled" && t === a)?.[2];
    const startOfB = (firstItemOf(b)?.item as { createdAt?: string } | undefined)?.createdAt;
    const endedA = (endOfA?.turn as { completedAt?: string } | undefined)?.completedAt;
    assert.ok(startOfB && endedA && startOfB >= endedA, `b's turn ran only after a's ended: ${startOfB} against ${endedA}`);
    assert.equal(firstItemOf(c), undefined, "c never ran");
    assert.equal(h.fake.requests.length, 2, "the model was asked for a and b only");
    h.model.assertConsumed();
  });
});
