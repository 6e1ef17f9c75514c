// Context-window management: the token estimate, the cut-point choice, compaction inside a
// turn, history rebuilt from a compaction notice, and end to end through the CLI.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ContextManager, SUMMARY_PREFIX, chooseCut, contextBudget, type Conversation } from "../../src/backends/builtin/compaction.js";
import { rebuildHistory } from "../../src/backends/builtin/history.js";
import {
  calibrationFactor,
  estimateFixedTokens,
  estimateMessageTokens,
  estimateRequestTokens,
  estimateTextTokens,
} from "../../src/backends/builtin/tokens.js";
import type { ConversationMessage, ModelProvider, ModelRequest, ModelStreamEvent, UsageReport } from "../../src/providers/provider.js";
import type { NewEvent } from "../../src/domain/events.js";
import type { Item, ItemOf, ItemPayloads, ItemType } from "../../src/domain/model.js";
import { TurnRecorder } from "../../src/domain/turn-recorder.js";
import { FakeModelServer, type RecordedRequest } from "../support/fake-model-server.js";
import { startHarness, text, type Harness } from "../support/harness.js";

const user = (content: string): ConversationMessage => ({ role: "user", content });
const assistant = (content: string, calls: string[] = []): ConversationMessage => ({
  role: "assistant",
  content,
  ...(calls.length ? { toolCalls: calls.map((id) => ({ id, name: "read_file", argumentsText: '{"path":"a"}' })) } : {}),
});
const tool = (id: string, content: string): ConversationMessage => ({ role: "tool", toolCallId: id, toolName: "read_file", content });

describe("token estimate", () => {
  it("is chars/4 rounded up, plus 4 per message", () => {
    assert.equal(estimateTextTokens(""), 0);
    assert.equal(estimateTextTokens("abcde"), 2);
    assert.equal(estimateMessageTokens(user("x".repeat(400))), 104);
    // Tool calls count their id, name and arguments; tool results their call id and tool name.
    assert.equal(estimateMessageTokens(assistant("", ["c1"])), 4 + Math.ceil((2 + 9 + 12) / 4));
    assert.equal(estimateMessageTokens(tool("c1", "x".repeat(89))), 4 + 25);
  });

  it("of a request is the fixed part plus the sum of its messages, deterministically", () => {
    const request = {
      system: "s".repeat(40),
      tools: [{ name: "t", description: "d", parameters: { type: "object" } }],
      messages: [user("hello"), assistant("hi there", ["c1"]), tool("c1", "result")],
    };
    const fixed = estimateFixedTokens(request);
    assert.equal(fixed, 10 + estimateTextTokens(JSON.stringify(request.tools)));
    const total = estimateRequestTokens(request);
    assert.equal(total, fixed + request.messages.reduce((sum, m) => sum + estimateMessageTokens(m), 0));
    assert.equal(estimateRequestTokens(request), total);
    assert.equal(estimateFixedTokens({ system: "", tools: [] }), 0);
  });

  it("calibrates upwards only, and at most 4x", () => {
    assert.equal(calibrationFactor(1000, 1500), 1.5);
    assert.equal(calibrationFactor(1000, 500), 1);
    assert.equal(calibrationFactor(1000, 100_000), 4);
    assert.equal(calibrationFactor(0, 100), 1);
    assert.equal(calibrationFactor(1000, 0), 1);
  });
});

describe("context budget", () => {
  it("compacts at 80% of large windows and keeps 8k for the answer", () => {
    assert.deepEqual(contextBudget(200_000), {
      window: 200_000,
      outputReserve: 8192,
      compactAt: 160_000,
      maxInput: 191_808,
      keep: 80_000,
      summaryTokens: 4096,
    });
  });

  it("caps the answer's room at a quarter of small windows", () => {
    const budget = contextBudget(6000);
    assert.equal(budget.outputReserve, 1500);
    assert.equal(budget.compactAt, 4500);
    assert.equal(budget.maxInput, 4500);
    assert.equal(budget.keep, 2400);
    assert.equal(budget.summaryTokens, 600);
    assert.equal(contextBudget(200_000, 32_000).maxInput, 168_000);
  });
});

describe("cut point", () => {
  const length = (m: ConversationMessage): number => m.content.length;

  it("keeps as many recent messages as fit", () => {
    const messages = [user("aaaa"), assistant("bbbb"), user("cc"), assistant("dd"), user("e")];
    assert.deepEqual(chooseCut(messages, { budget: 5, tokens: length }), { cut: 2, keepsPinned: false });
    assert.deepEqual(chooseCut(messages, { budget: 1000, tokens: length }), { cut: 1, keepsPinned: false });
  });

  it("never separates tool calls from their results", () => {
    const messages = [
      user("u".repeat(10)),
      assistant("", ["c1", "c2"]),
      tool("c1", "r".repeat(10)),
      tool("c2", "r".repeat(10)),
      user("next"),
    ];
    // 14 would fit the second result and "next", but that would orphan it: the cut moves to "next".
    const choice = chooseCut(messages, { budget: 14, tokens: length });
    assert.deepEqual(choice, { cut: 4, keepsPinned: false });
    for (let budget = 0; budget < 40; budget++) {
      const cut = chooseCut(messages, { budget, tokens: length })!.cut;
      assert.notEqual(messages[cut]?.role, "tool", `budget ${budget} cut at a tool result`);
    }
  });

  it("keeps the pinned request verbatim when it falls before the cut", () => {
    const messages = [
      user("old".repeat(10)),
      assistant("x".repeat(10)),
      user("task"),
      assistant("", ["c1"]),
      tool("c1", "r".repeat(30)),
      assistant("", ["c2"]),
      tool("c2", "ok"),
    ];
    assert.deepEqual(chooseCut(messages, { budget: 10, pinned: 2, tokens: length }), { cut: 5, keepsPinned: true });
    // The pinned message alone is never "something to summarize".
    assert.equal(chooseCut([user("task")], { budget: 0, pinned: 0, tokens: length }), undefined);
  });

  it("falls back to the latest cut when nothing fits", () => {
    const messages = [user("a".repeat(50)), assistant("b".repeat(50)), user("c".repeat(50))];
    assert.deepEqual(chooseCut(messages, { budget: 10, pinned: 2, tokens: length }), { cut: 3, keepsPinned: true });
  });
});

/** A provider answering from a script, recording requests. */
class ScriptProvider implements ModelProvider {
  readonly name = "script";
  readonly defaultModel = "m";
  readonly requests: ModelRequest[] = [];
  constructor(private readonly replies: Array<{ text: string; usage?: UsageReport }>) {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    this.requests.push(request);
    const reply = this.replies.shift() ?? { text: "ok" };
    yield { type: "textDelta", delta: reply.text };
    if (reply.usage) yield { type: "usage", usage: reply.usage };
    yield { type: "stop", reason: "end" };
  }
}

function managerWith(provider: ScriptProvider, contextWindow: number | undefined) {
  const events: NewEvent[] = [];
  const usage: UsageReport[] = [];
  const recorder = new TurnRecorder((event) => events.push(event), "thr", "turn");
  const manager = new ContextManager({
    recorder,
    signal: new AbortController().signal,
    provider,
    model: "m",
    system: "",
    toolSpecs: [],
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    onUsage: (u) => usage.push(u),
  });
  const notices = (): Array<ItemOf<"systemNotice">> =>
    events.flatMap((e) =>
      e.type === "item.completed" && (e.data as { item: Item }).item.type === "systemNotice"
        ? [(e.data as { item: ItemOf<"systemNotice"> }).item]
        : [],
    );
  return { manager, notices, usage };
}

describe("compaction inside a turn", () => {
  // Window 1000: compact above 750, keep 400, summaries up to 256 tokens. 1049 tokens in all.
  const conversation = (): Conversation => {
    const task = user("do the task");
    const messages = [
      user("u".repeat(1200)),
      assistant("a".repeat(1200)),
      task,
      assistant("", ["c1"]),
      tool("c1", "x".repeat(800)),
      assistant("", ["c2"]),
      tool("c2", "y".repeat(800)),
    ];
    const ids = ["i-u1", "i-a1", "i-task", "i-c1", "i-r1", "i-c2", "i-r2"];
    return { messages, itemIds: new Map(messages.map((m, i) => [m, ids[i]!])), latestUser: task };
  };

  it("summarizes older messages, keeps the task and the last call with its result", async () => {
    const provider = new ScriptProvider([{ text: "They discussed u and a; c1 read a.", usage: { inputTokens: 900, outputTokens: 20 } }]);
    const { manager, notices, usage } = managerWith(provider, 1000);
    const conv = conversation();
    const [, , task, , , call2, result2] = conv.messages;
    assert.equal(manager.estimate(conv.messages), 1049);
    assert.equal(await manager.fit(conv), true);

    assert.deepEqual(
      conv.messages.map((m) => m.content),
      [`${SUMMARY_PREFIX}They discussed u and a; c1 read a.`, "do the task", "", "y".repeat(800)],
    );
    assert.equal(conv.messages[1], task);
    assert.equal(conv.messages[2], call2);
    assert.equal(conv.messages[3], result2);
    assert.ok(manager.estimate(conv.messages) < contextBudget(1000).compactAt);

    const [summaryRequest] = provider.requests;
    assert.deepEqual(summaryRequest!.tools, []);
    assert.equal(summaryRequest!.maxOutputTokens, 256);
    assert.equal(summaryRequest!.messages.length, 1);
    assert.match(summaryRequest!.messages[0]!.content, /\[assistant called read_file\]\n\{"path":"a"\}\n\n\[result of read_file\]\nx{800}/);
    assert.doesNotMatch(summaryRequest!.messages[0]!.content, /y{800}/);
    assert.deepEqual(usage, [{ inputTokens: 900, outputTokens: 20 }]);

    const [notice] = notices();
    assert.deepEqual(notice!.payload, {
      kind: "compaction",
      message: "Compacted 4 earlier messages into a summary to stay within the model's context window (1049 of 1000 tokens).",
      summary: "They discussed u and a; c1 read a.",
      coversThroughItemId: "i-r1",
      keptUserItemId: "i-task",
    });
    assert.equal(conv.itemIds.get(conv.messages[0]!), notice!.id);
  });

  it("does nothing below the threshold or without a known window", async () => {
    const provider = new ScriptProvider([]);
    for (const window of [undefined, 100_000]) {
      const { manager, notices } = managerWith(provider, window);
      const conv = conversation();
      assert.equal(await manager.fit(conv), false);
      assert.equal(conv.messages.length, 7);
      assert.equal(notices().length, 0);
    }
    assert.equal(provider.requests.length, 0);
  });

  it("refuses, without a summarization call, a request that cannot fit however it is compacted", async () => {
    const provider = new ScriptProvider([]);
    const { manager } = managerWith(provider, 1000);
    const huge = user("h".repeat(4000));
    const conv: Conversation = { messages: [user("earlier"), assistant("reply"), huge], itemIds: new Map(), latestUser: huge };
    await assert.rejects(
      manager.fit(conv),
      (error: Error & { code?: string }) =>
        error.code === "contextWindowExceeded" && /too large for the model's context window/.test(error.message),
    );
    assert.equal(provider.requests.length, 0);
  });

  it("calibrates with the provider's count: a higher real count compacts earlier", async () => {
    const provider = new ScriptProvider([{ text: "summary" }]);
    const { manager, notices } = managerWith(provider, 1000);
    const conv = conversation();
    conv.messages.splice(0, 2); // 441 tokens by estimate: no compaction needed
    assert.equal(await manager.fit(conv), false);
    manager.calibrate(manager.rawEstimate(conv.messages), 882); // the provider counted 2x
    assert.equal(manager.estimate(conv.messages), 882);
    assert.equal(await manager.fit(conv), true);
    assert.equal(notices().length, 1);
  });
});

describe("history after a compaction", () => {
  let n = 0;
  const item = <T extends ItemType>(type: T, payload: ItemPayloads[T], id = `item_${++n}`): Item =>
    ({ id, threadId: "thr", turnId: "turn", type, status: "completed", createdAt: "", payload }) as ItemOf<T> as Item;
  const said = (t: string, id?: string): Item => item("userMessage", { text: t, input: [{ type: "text", text: t }] }, id);
  const answer = (t: string, id?: string): Item => item("agentMessage", { text: t }, id);

  it("starts from the latest notice's summary, then the items after what it covers", () => {
    const items = [
      said("one"),
      answer("first", "a1"),
      item("systemNotice", { kind: "compaction", message: "m", summary: "S1", coversThroughItemId: "a1" }),
      said("two", "u2"),
      answer("second"),
      said("three"),
      item("systemNotice", { kind: "compaction", message: "m", summary: "S2", coversThroughItemId: "u2" }),
      answer("third"),
    ];
    const { messages, itemIds } = rebuildHistory(items);
    assert.deepEqual(
      messages.map((m) => `${m.role}:${m.content}`),
      [`user:${SUMMARY_PREFIX}S2`, "assistant:second", "user:three", "assistant:third"],
    );
    assert.equal(itemIds.get(messages[0]!), items[6]!.id);
    assert.equal(itemIds.get(messages[2]!), items[5]!.id);
  });

  it("keeps a covered request verbatim, and drops results whose calls were summarized", () => {
    const items = [
      said("old"),
      said("task", "task"),
      item("toolCall", { callId: "c1", toolName: "read_file", argumentsText: "{}" }, "c1"),
      item("toolCall", { callId: "c2", toolName: "read_file", argumentsText: "{}" }, "c2"),
      item("toolResult", { callId: "c1", toolName: "read_file", success: true, output: "r1" }),
      item("toolResult", { callId: "c2", toolName: "read_file", success: true, output: "r2" }),
      item("toolCall", { callId: "c3", toolName: "read_file", argumentsText: "{}" }),
      item("toolResult", { callId: "c3", toolName: "read_file", success: true, output: "r3" }),
      item("systemNotice", { kind: "compaction", message: "m", summary: "S", coversThroughItemId: "c2", keptUserItemId: "task" }),
    ];
    const { messages } = rebuildHistory(items);
    assert.deepEqual(
      messages.map((m) => `${m.role}:${m.content}`),
      [`user:${SUMMARY_PREFIX}S`, "user:task", "assistant:", "tool:r3"],
    );
  });

  it("ignores a notice whose covered item is missing (a forked thread) and plain notices", () => {
    const items = [
      said("one"),
      item("systemNotice", { kind: "info", message: "hello" }),
      item("systemNotice", { kind: "compaction", message: "m", summary: "S", coversThroughItemId: "gone" }),
      answer("two"),
    ];
    assert.deepEqual(
      rebuildHistory(items).messages.map((m) => m.content),
      ["one", "two"],
    );
  });
});

// ---- end to end -----------------------------------------------------------------------------

type WireItem = { id: string; type: string; payload: Record<string, unknown> };
type Body = { messages: Array<{ role: string; content: unknown }>; tools?: unknown[] };

/** About 2,000 characters (~500 tokens) that start with a marker to look for. */
const long = (marker: string): string => `${marker} ${"lorem ipsum dolor sit amet ".repeat(74)}`.trim();
const bodyOf = (request: RecordedRequest): Body => request.body as Body;
const wireText = (body: Body): string => JSON.stringify(body.messages);
/** The wire request's size by the same rule of thumb (JSON adds a little). */
const wireTokens = (body: Body): number => Math.ceil((JSON.stringify(body.messages).length + JSON.stringify(body.tools ?? []).length) / 4);
const isSummaryRequest = (body: Body): boolean => wireText(body).includes("<conversation>");

describe("compaction end to end", () => {
  // What every request carries besides the conversation is kept small and fixed, so that a new
  // tool or system skill does not change what these tests compact: one tool, no skills.
  const WINDOW = 4100;
  let fake: FakeModelServer;
  let h: Harness;
  before(async () => {
    fake = await FakeModelServer.start();
    h = await startHarness({ fake });
  });
  /** A thread with the test's window, one tool, and its workspace's skills disabled. */
  async function startThread(harness: Harness): Promise<string> {
    const { skills } = (await harness.client.call("skills/list", { workspacePath: harness.workspace })) as {
      skills: Array<{ name: string }>;
    };
    for (const { name } of skills)
      await harness.client.call("skills/setEnabled", { workspacePath: harness.workspace, name, enabled: false });
    return harness.startThread({ configuration: { contextWindow: WINDOW, tools: ["read_file"] } });
  }
  after(async () => {
    await h.close();
    await fake.close();
  });

  async function turn(harness: Harness, threadId: string, message: string): Promise<{ end: string; params: Record<string, unknown> }> {
    const started = await harness.client.call("turn/start", { threadId, input: text(message) });
    const end = await harness.client.turnEnd(threadId, (started.turn as { id: string }).id);
    return { end: end.method!, params: end.params! };
  }
  const notices = (harness: Harness, threadId: string): WireItem[] =>
    harness.client
      .notifications("item/completed")
      .filter((p) => p.threadId === threadId)
      .map((p) => p.item as WireItem)
      .filter((i) => i.type === "systemNotice");

  it("summarizes older turns, sends the summary instead of them, and keeps it after a restart", async () => {
    const first = await startHarness({ fake });
    const threadId = await startThread(first);
    for (const n of [1, 2, 3]) {
      fake.enqueue({ kind: "response", text: long(`ANSWER-${n}`) });
      assert.equal((await turn(first, threadId, long(`QUESTION-${n}`))).end, "turn/completed");
    }
    assert.equal(notices(first, threadId).length, 0);

    const before = fake.requests.length;
    fake.enqueue(
      { kind: "response", text: "SUMMARY-OF-1-TO-3", usage: { input: 1000, output: 50 } },
      { kind: "response", text: "ANSWER-4", usage: { input: 2000, output: 10 } },
    );
    const fourth = await turn(first, threadId, long("QUESTION-4"));
    assert.equal(fourth.end, "turn/completed");

    // The summarization request: no tools, the old conversation as text.
    const [summarize, real] = fake.requests.slice(before).map(bodyOf);
    assert.equal(fake.requests.length, before + 2);
    assert.ok(isSummaryRequest(summarize!));
    assert.equal(summarize!.tools, undefined);
    assert.match(wireText(summarize!), /QUESTION-1.*ANSWER-1.*QUESTION-2.*ANSWER-2.*QUESTION-3/);

    // The real request: the summary replaces the old messages, and it fits the window.
    const sent = wireText(real!);
    assert.ok(real!.tools && real!.tools.length > 0);
    assert.match(sent, new RegExp(`${SUMMARY_PREFIX}SUMMARY-OF-1-TO-3`));
    for (const old of ["QUESTION-1", "ANSWER-1", "QUESTION-2", "ANSWER-2", "QUESTION-3"]) assert.doesNotMatch(sent, new RegExp(old));
    assert.match(sent, /ANSWER-3.*QUESTION-4/);
    assert.ok(wireTokens(real!) < contextBudget(WINDOW).compactAt, `${wireTokens(real!)} tokens`);

    const [notice] = notices(first, threadId);
    assert.equal(notice!.payload.kind, "compaction");
    assert.match(
      String(notice!.payload.message),
      /^Compacted 5 earlier messages into a summary to stay within the model's context window \(\d+ of 4100 tokens\)\.$/,
    );
    assert.equal(notice!.payload.summary, "SUMMARY-OF-1-TO-3");
    // The summarization call counts towards the turn's usage.
    const usage = (fourth.params.turn as { tokenUsage: { inputTokens: number; outputTokens: number } }).tokenUsage;
    assert.equal(usage.inputTokens, 3000);
    assert.equal(usage.outputTokens, 60);

    // After a restart the thread continues from the summary.
    await first.close();
    const second = await startHarness({ fake, dataDir: first.server.dataDir });
    try {
      const afterRestart = fake.requests.length;
      fake.enqueue({ kind: "response", text: "ANSWER-5" });
      assert.equal((await turn(second, threadId, "QUESTION-5")).end, "turn/completed");
      assert.equal(fake.requests.length, afterRestart + 1, "no second compaction");
      const resumed = wireText(bodyOf(fake.requests[afterRestart]!));
      assert.match(resumed, /SUMMARY-OF-1-TO-3.*ANSWER-3.*QUESTION-4.*ANSWER-4.*QUESTION-5/);
      for (const old of ["QUESTION-1", "ANSWER-1", "QUESTION-3"]) assert.doesNotMatch(resumed, new RegExp(old));
    } finally {
      await second.close();
    }
  });

  it("fails a message too large for the window without sending anything", async () => {
    const threadId = await startThread(h);
    fake.enqueue({ kind: "response", text: "short answer" });
    await turn(h, threadId, "short question");
    const before = fake.requests.length;
    const result = await turn(h, threadId, "x".repeat(20_000));
    assert.equal(result.end, "turn/failed");
    const error = result.params.error as { code: string; message: string };
    assert.equal(error.code, "contextWindowExceeded");
    assert.match(error.message, /too large for the model's context window/);
    assert.equal(fake.requests.length, before);
  });

  it("compacts and retries once when the model server reports a context-length error", async () => {
    const threadId = await startThread(h);
    fake.enqueue({ kind: "response", text: "FIRST-ANSWER" });
    await turn(h, threadId, "FIRST-QUESTION");
    const before = fake.requests.length;
    fake.enqueue(
      {
        kind: "error",
        status: 400,
        message: "This model's maximum context length is 6000 tokens. However, your messages resulted in 9000 tokens.",
      },
      { kind: "response", text: "SUMMARY-AFTER-400" },
      { kind: "response", text: "SECOND-ANSWER" },
    );
    assert.equal((await turn(h, threadId, "SECOND-QUESTION")).end, "turn/completed");
    const [rejected, summarize, retried] = fake.requests.slice(before).map(bodyOf);
    assert.equal(fake.requests.length, before + 3);
    assert.match(wireText(rejected!), /FIRST-QUESTION/);
    assert.ok(isSummaryRequest(summarize!));
    assert.equal(summarize!.tools, undefined);
    const sent = wireText(retried!);
    assert.match(sent, /SUMMARY-AFTER-400.*SECOND-QUESTION/);
    assert.doesNotMatch(sent, /FIRST-QUESTION|FIRST-ANSWER/);
    const [notice] = notices(h, threadId);
    assert.match(
      String(notice!.payload.message),
      /^Compacted 2 earlier messages into a summary after the model reported the request as too long/,
    );
  });

  it("fails the turn when the retry after compaction is rejected too", async () => {
    const threadId = await startThread(h);
    fake.enqueue({ kind: "response", text: "FIRST-ANSWER" });
    await turn(h, threadId, "FIRST-QUESTION");
    const before = fake.requests.length;
    const tooLong = { kind: "error", status: 400, message: "This model's maximum context length is 6000 tokens." } as const;
    fake.enqueue(tooLong, { kind: "response", text: "SUMMARY" }, tooLong);
    const result = await turn(h, threadId, "SECOND-QUESTION");
    assert.equal(result.end, "turn/failed");
    assert.equal((result.params.error as { code: string }).code, "contextWindowExceeded");
    assert.equal(fake.requests.length, before + 3);
  });
});
