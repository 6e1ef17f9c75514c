// Usage and cost end to end: per-call item/usage/delta notifications, turn totals, thread
// totals on thread/read and thread/list, and the model catalog (model/list).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startHarness, text, type Harness } from "../support/harness.js";

// gpt-4.1 list prices: $2 input, $0.50 cached input, $8 output per million tokens.
const CALL_1 = { inputTokens: 1000, outputTokens: 200, totalTokens: 1200, cachedInputTokens: 400, costUsd: 0.003 }; // 600x2 + 400x0.5 + 200x8
const CALL_2 = { inputTokens: 1500, outputTokens: 100, totalTokens: 1600, cachedInputTokens: 1000, costUsd: 0.0023 }; // 500x2 + 1000x0.5 + 100x8
const TURN_A = { inputTokens: 2500, outputTokens: 300, totalTokens: 2800, cachedInputTokens: 1400, costUsd: 0.0053 };
const TURN_B = { inputTokens: 200, outputTokens: 50, totalTokens: 250, costUsd: 0.0008 }; // 200x2 + 50x8
const THREAD = { inputTokens: 2700, outputTokens: 350, totalTokens: 3050, cachedInputTokens: 1400, costUsd: 0.0061 };

describe("usage and cost", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ args: ["--model", "gpt-4.1"], files: { "a.txt": "hello\n" } });
  });
  after(() => h.close());

  it("reports each model call's usage and cost, and the totals of turn and thread", async () => {
    h.fake.enqueue(
      {
        kind: "response",
        toolCalls: [{ id: "call_r", name: "read_file", arguments: { path: "a.txt" } }],
        usage: { input: 1000, output: 200, cacheRead: 400 },
      },
      { kind: "response", text: "read it", usage: { input: 1500, output: 100, cacheRead: 1000 } },
      { kind: "response", text: "again", usage: { input: 200, output: 50 } },
    );
    const threadId = await h.startThread();
    const first = await h.client.call("turn/start", { threadId, input: text("read a.txt") });
    const turnA = (first.turn as { id: string }).id;
    const endA = await h.client.turnEnd(threadId, turnA);
    assert.equal(endA.method, "turn/completed");
    assert.deepEqual((endA.params!.turn as { tokenUsage: unknown }).tokenUsage, TURN_A);

    const deltas = h.client.notifications("item/usage/delta").filter((p) => p.turnId === turnA);
    assert.deepEqual(
      deltas.map((p) => p.usage),
      [CALL_1, CALL_2],
    );
    assert.deepEqual(
      deltas.map((p) => p.total),
      [CALL_1, TURN_A],
    );
    assert.ok(deltas.every((p) => p.threadId === threadId && typeof p.seq === "number"));

    const second = await h.client.call("turn/start", { threadId, input: text("again") });
    const endB = await h.client.turnEnd(threadId, (second.turn as { id: string }).id);
    assert.deepEqual((endB.params!.turn as { tokenUsage: unknown }).tokenUsage, TURN_B);

    const read = await h.client.call("thread/read", { threadId, includeTurns: false });
    assert.deepEqual((read.thread as { tokenUsage: unknown }).tokenUsage, THREAD);
    const list = await h.client.call("thread/list", {});
    const listed = (list.data as Array<{ id: string; tokenUsage?: unknown }>).find((t) => t.id === threadId);
    assert.deepEqual(listed?.tokenUsage, THREAD);

    // A thread without model calls has no usage yet.
    const idle = await h.startThread();
    const idleRead = await h.client.call("thread/read", { threadId: idle });
    assert.equal((idleRead.thread as { tokenUsage?: unknown }).tokenUsage, undefined);
  });

  it("lists the catalog merged with the provider's live listing, cached", async () => {
    const before = h.fake.requests.filter((r) => r.method === "GET" && r.path === "/v1/models").length;
    const result = await h.client.call("model/list", {});
    const models = result.data as Array<{
      id: string;
      provider: string;
      isDefault: boolean;
      reasoning: boolean;
      pricing?: { inputPerMTok: number };
      contextWindow?: number;
    }>;
    const byId = new Map(models.map((m) => [m.id, m]));
    // gpt-4.1 and gpt-4.1-mini come from the live listing, gpt-4o only from the built-in catalog.
    assert.deepEqual(byId.get("gpt-4.1"), {
      id: "gpt-4.1",
      provider: "openai-chat",
      contextWindow: 1_047_576,
      maxOutputTokens: 32_768,
      reasoning: false,
      inputModalities: ["text", "image"],
      pricing: { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 },
      isDefault: true,
    });
    assert.ok(byId.has("gpt-4.1-mini") && byId.has("gpt-4o"));
    assert.equal(models.filter((m) => m.isDefault).length, 1);
    assert.ok(models.every((m) => m.provider === "openai-chat"));

    assert.deepEqual((await h.client.call("model/list", { provider: "anthropic" })).data, []);
    const after = h.fake.requests.filter((r) => r.method === "GET" && r.path === "/v1/models").length;
    assert.equal(after - before, 1, "the live listing is fetched once and cached");
  });
});
