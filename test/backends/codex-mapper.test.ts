// The codex notification mapper on its own: notifications in, recorder events and reports out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { NewEvent } from "../../src/domain/events.js";
import type { Item, PlanStep, TokenUsage } from "../../src/domain/model.js";
import { TurnRecorder } from "../../src/domain/turn-recorder.js";
import { CodexTurnMapper, renderDiff } from "../../src/backends/codex/mapper.js";

const WS = "/work/space";
const base = { threadId: "thr", turnId: "turn1" };

function setup(total?: ConstructorParameters<typeof CodexTurnMapper>[2]) {
  const events: NewEvent[] = [];
  const usage: TokenUsage[] = [];
  const plans: Array<{ explanation?: string; steps: PlanStep[] }> = [];
  const diffs: string[] = [];
  const recorder = new TurnRecorder((e) => events.push(e), "t", "turn");
  const mapper = new CodexTurnMapper(
    { recorder, reportUsage: (u) => usage.push(u), reportPlan: (p) => plans.push(p), reportDiff: (d) => diffs.push(d) },
    WS,
    total,
  );
  const completed = (): Item[] => events.flatMap((e) => (e.type === "item.completed" ? [(e.data as { item: Item }).item] : []));
  const started = (): Item[] => events.flatMap((e) => (e.type === "item.started" ? [(e.data as { item: Item }).item] : []));
  const deltas = (): string[] => events.flatMap((e) => (e.type === "item.delta" ? [(e.data as { delta: string }).delta] : []));
  return { mapper, usage, plans, diffs, completed, started, deltas };
}

const breakdown = (input: number, output: number, cached = 0) => ({
  totalTokens: input + output,
  inputTokens: input,
  cachedInputTokens: cached,
  cacheWriteInputTokens: 0,
  outputTokens: output,
  reasoningOutputTokens: 0,
});

describe("CodexTurnMapper", () => {
  it("records an empty reasoning item not at all, and a message with its deltas and final text", () => {
    const t = setup();
    t.mapper.handle("item/started", { ...base, item: { type: "reasoning", id: "rs1", summary: [], content: [] } });
    t.mapper.handle("item/completed", { ...base, item: { type: "reasoning", id: "rs1", summary: [], content: [] } });
    t.mapper.handle("item/started", { ...base, item: { type: "agentMessage", id: "m1", text: "" } });
    t.mapper.handle("item/agentMessage/delta", { ...base, itemId: "m1", delta: "Hi " });
    t.mapper.handle("item/agentMessage/delta", { ...base, itemId: "m1", delta: "there" });
    t.mapper.handle("item/completed", { ...base, item: { type: "agentMessage", id: "m1", text: "Hi there" } });
    assert.deepEqual(
      t.started().map((i) => i.type),
      ["agentMessage"],
    );
    assert.deepEqual(t.deltas(), ["Hi ", "there"]);
    const [message] = t.completed();
    assert.equal(message!.type, "agentMessage");
    assert.deepEqual(message!.payload, { text: "Hi there" });
  });

  it("joins reasoning summary parts as paragraphs, and records a reasoning item that only completes with text", () => {
    const t = setup();
    t.mapper.handle("item/started", { ...base, item: { type: "reasoning", id: "rs1", summary: [] } });
    t.mapper.handle("item/reasoning/summaryPartAdded", { ...base, itemId: "rs1", summaryIndex: 0 });
    t.mapper.handle("item/reasoning/summaryTextDelta", { ...base, itemId: "rs1", delta: "One.", summaryIndex: 0 });
    t.mapper.handle("item/reasoning/summaryPartAdded", { ...base, itemId: "rs1", summaryIndex: 1 });
    t.mapper.handle("item/reasoning/summaryTextDelta", { ...base, itemId: "rs1", delta: "Two.", summaryIndex: 1 });
    t.mapper.handle("item/completed", { ...base, item: { type: "reasoning", id: "rs1", summary: ["One.", "Two."] } });
    t.mapper.handle("item/completed", { ...base, item: { type: "reasoning", id: "rs2", summary: [], content: ["raw thoughts"] } });
    assert.deepEqual(
      t.completed().map((i) => [i.type, i.payload]),
      [
        ["reasoningContent", { text: "One.\n\nTwo." }],
        ["reasoningContent", { text: "raw thoughts" }],
      ],
    );
  });

  it("maps a command execution with streamed output, and gives its command to approvals", () => {
    const t = setup();
    const item = {
      type: "commandExecution",
      id: "c1",
      command: "ls -la",
      cwd: WS,
      status: "inProgress",
      aggregatedOutput: null,
      exitCode: null,
    };
    t.mapper.handle("item/started", { ...base, item });
    assert.deepEqual(t.mapper.command("c1"), { command: "ls -la", cwd: WS });
    t.mapper.handle("item/commandExecution/outputDelta", { ...base, itemId: "c1", delta: "a\n" });
    t.mapper.handle("item/completed", { ...base, item: { ...item, status: "completed", aggregatedOutput: "a\nb\n", exitCode: 2 } });
    const [command] = t.completed();
    assert.deepEqual(command!.payload, { callId: "c1", command: "ls -la", cwd: WS, output: "a\nb\n", exitCode: 2 });
    assert.equal(t.mapper.command("c1"), undefined);
  });

  it("records accepted file changes with git-style diffs (paths relative to the workspace) and reports the turn diff", () => {
    const t = setup();
    const changes = [
      { path: `${WS}/src/a.ts`, kind: { type: "update", move_path: null }, diff: "@@ -1 +1 @@\n-old\n+new\n" },
      { path: `${WS}/b.txt`, kind: { type: "add" }, diff: "fresh\n" },
    ];
    t.mapper.handle("item/started", { ...base, item: { type: "fileChange", id: "f1", changes, status: "inProgress" } });
    assert.deepEqual(
      t.mapper.fileChanges("f1")?.map((c) => c.path),
      [`${WS}/src/a.ts`, `${WS}/b.txt`],
    );
    t.mapper.handle("item/completed", { ...base, item: { type: "fileChange", id: "f1", changes, status: "completed" } });
    const items = t.completed();
    assert.deepEqual(
      items.map((i) => [i.type, (i.payload as { path: string }).path, (i.payload as { kind: string }).kind]),
      [
        ["fileChange", "src/a.ts", "update"],
        ["fileChange", "b.txt", "add"],
      ],
    );
    assert.equal(
      (items[0]!.payload as { diff: string }).diff,
      "diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-old\n+new\n",
    );
    assert.match((items[1]!.payload as { diff: string }).diff, /new file mode[\s\S]*\+fresh/);
    assert.equal(t.diffs.length, 1);
    assert.ok(t.diffs[0]!.indexOf("b.txt") < t.diffs[0]!.indexOf("src/a.ts"), "sorted by path");
    // Codex's own turn diff wins from then on.
    t.mapper.handle("turn/diff/updated", { ...base, diff: "codex diff" });
    t.mapper.handle("item/completed", { ...base, item: { type: "fileChange", id: "f2", changes: [changes[1]], status: "completed" } });
    assert.deepEqual(t.diffs.slice(1), ["codex diff"]);
  });

  it("records nothing for a declined file change", () => {
    const t = setup();
    const changes = [{ path: `${WS}/x`, kind: { type: "add" }, diff: "x\n" }];
    t.mapper.handle("item/completed", { ...base, item: { type: "fileChange", id: "f1", changes, status: "declined" } });
    assert.deepEqual(t.completed(), []);
    assert.deepEqual(t.diffs, []);
  });

  it("maps an MCP tool call to toolCall + toolResult", () => {
    const t = setup();
    const item = { type: "mcpToolCall", id: "mcp1", server: "docs", tool: "search", status: "inProgress", arguments: { q: "zod" } };
    t.mapper.handle("item/started", { ...base, item });
    t.mapper.handle("item/completed", {
      ...base,
      item: { ...item, status: "completed", result: { content: [{ type: "text", text: "found it" }] } },
    });
    const [call, result] = t.completed();
    assert.deepEqual(call!.payload, { callId: "mcp1", toolName: "docs/search", argumentsText: '{"q":"zod"}', arguments: { q: "zod" } });
    assert.deepEqual(result!.payload, { callId: "mcp1", toolName: "docs/search", success: true, output: "found it" });
  });

  it("turns codex's running token totals into per-call deltas, skipping repeats", () => {
    const t = setup(breakdown(1000, 100));
    t.mapper.handle("thread/tokenUsage/updated", {
      ...base,
      tokenUsage: { total: breakdown(1300, 150, 200), last: breakdown(300, 50, 200) },
    });
    t.mapper.handle("thread/tokenUsage/updated", {
      ...base,
      tokenUsage: { total: breakdown(1300, 150, 200), last: breakdown(300, 50, 200) },
    });
    t.mapper.handle("thread/tokenUsage/updated", { ...base, tokenUsage: { total: breakdown(1700, 160, 200), last: breakdown(400, 10) } });
    assert.deepEqual(t.usage, [
      { inputTokens: 300, outputTokens: 50, totalTokens: 350, cachedInputTokens: 200 },
      { inputTokens: 400, outputTokens: 10, totalTokens: 410 },
    ]);
    // Without an earlier total (a fresh process), the latest call's own numbers are used.
    const fresh = setup();
    fresh.mapper.handle("thread/tokenUsage/updated", { ...base, tokenUsage: { total: breakdown(5000, 500), last: breakdown(70, 7) } });
    assert.deepEqual(fresh.usage, [{ inputTokens: 70, outputTokens: 7, totalTokens: 77 }]);
    assert.deepEqual(
      [fresh.mapper.usageTotal?.inputTokens, fresh.mapper.usageTotal?.outputTokens],
      [5000, 500],
      "the baseline for the next update",
    );
  });

  it("maps plan updates and the turn's end", () => {
    const t = setup();
    t.mapper.handle("turn/plan/updated", {
      ...base,
      explanation: null,
      plan: [
        { step: "a", status: "inProgress" },
        { step: "b", status: "pending" },
      ],
    });
    assert.deepEqual(t.plans, [
      {
        steps: [
          { step: "a", status: "in_progress" },
          { step: "b", status: "pending" },
        ],
      },
    ]);
    const turn = (status: string, error: unknown = null) => ({ threadId: "thr", turn: { id: "turn1", status, error } });
    assert.deepEqual(t.mapper.handle("turn/completed", turn("completed")), { status: "completed" });
    assert.deepEqual(t.mapper.handle("turn/completed", turn("interrupted")), { status: "interrupted" });
    assert.deepEqual(t.mapper.handle("turn/completed", turn("failed", { message: "quota exceeded", additionalDetails: null })), {
      status: "failed",
      message: "quota exceeded",
    });
    // A failed turn without an error of its own takes the last error notification's.
    t.mapper.handle("error", { ...base, error: { message: "retrying", additionalDetails: null }, willRetry: true });
    t.mapper.handle("error", { ...base, error: { message: "gave up", additionalDetails: "after 5 tries" }, willRetry: false });
    assert.deepEqual(t.mapper.handle("turn/completed", turn("failed")), { status: "failed", message: "gave up\nafter 5 tries" });
  });

  it("renders a deleted file as a git deletion", () => {
    assert.equal(
      renderDiff("gone.txt", { path: "/w/gone.txt", kind: { type: "delete" }, diff: "a\nb\n" }),
      "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
    );
  });
});
