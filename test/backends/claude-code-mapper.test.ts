// The claude-code mapper on its own: stream-json messages in, items out (no process).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { TurnMapper, fileChangeOf, permissionAsk, resultError, resultUsage, turnCost } from "../../src/backends/claude-code/mapper.js";
import type { CliMessage } from "../../src/backends/claude-code/wire.js";
import type { NewEvent } from "../../src/domain/events.js";
import type { Item, PlanStep } from "../../src/domain/model.js";
import { TurnRecorder } from "../../src/domain/turn-recorder.js";
import { Workspace } from "../../src/tools/workspace.js";
import { tempDir } from "../support/server-process.js";

function setUp() {
  const events: NewEvent[] = [];
  const root = tempDir("mapper");
  const plans: PlanStep[][] = [];
  const diffs: string[] = [];
  const recorder = new TurnRecorder((e) => events.push(e), "thr_1", "turn_1");
  const mapper = new TurnMapper({
    recorder,
    workspace: new Workspace(root),
    workspacePath: root,
    reportPlan: (plan) => plans.push(plan.steps),
    reportDiff: (diff) => diffs.push(diff),
  });
  const completed = (): Item[] => events.filter((e) => e.type === "item.completed").map((e) => (e.data as { item: Item }).item);
  const deltas = (): string[] => events.filter((e) => e.type === "item.delta").map((e) => (e.data as { delta: string }).delta);
  return {
    events,
    root,
    plans,
    diffs,
    mapper,
    completed,
    deltas,
    feed: (...messages: unknown[]) => messages.forEach((m) => mapper.handle(m as CliMessage)),
  };
}

const stream = (event: Record<string, unknown>) => ({ type: "stream_event", event, parent_tool_use_id: null });
const assistant = (...content: unknown[]) => ({ type: "assistant", message: { id: "msg_1", content }, parent_tool_use_id: null });

describe("claude-code mapper", () => {
  it("streamed text becomes one agentMessage with deltas, completed by the assistant message", () => {
    const t = setUp();
    t.feed(
      stream({ type: "message_start", message: { id: "msg_1" } }),
      stream({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      stream({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hel" } }),
      stream({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "lo" } }),
      assistant({ type: "text", text: "Hello" }),
      stream({ type: "content_block_stop", index: 0 }),
    );
    assert.deepEqual(t.deltas(), ["Hel", "lo"]);
    const items = t.completed();
    assert.equal(items.length, 1);
    assert.deepEqual([items[0]!.type, items[0]!.payload], ["agentMessage", { text: "Hello" }]);
  });

  it("a block whose stop came before its assistant message is not recorded twice", () => {
    const t = setUp();
    t.feed(
      stream({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } }),
      stream({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "hmm" } }),
      stream({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } }),
      stream({ type: "content_block_stop", index: 0 }),
      assistant({ type: "thinking", thinking: "hmm", signature: "sig" }),
    );
    const items = t.completed();
    assert.equal(items.length, 1);
    assert.deepEqual(items[0]!.payload, { text: "hmm", signature: "sig" });
  });

  it("without partial messages, complete blocks become complete items", () => {
    const t = setUp();
    t.feed(
      assistant({ type: "text", text: "Whole" }),
      assistant({ type: "tool_use", id: "toolu_1", name: "Read", input: { file_path: "/x" } }),
    );
    const items = t.completed();
    assert.deepEqual(
      items.map((i) => i.type),
      ["agentMessage", "toolCall"],
    );
    assert.deepEqual(items[1]!.payload, {
      callId: "toolu_1",
      toolName: "Read",
      argumentsText: '{"file_path":"/x"}',
      arguments: { file_path: "/x" },
    });
  });

  it("a Bash result is a commandExecution (stdout and stderr, exit code) and a toolResult", () => {
    const t = setUp();
    t.feed(assistant({ type: "tool_use", id: "toolu_b", name: "Bash", input: { command: "false" } }), {
      type: "user",
      message: { content: [{ type: "tool_result", tool_use_id: "toolu_b", content: "Exit code 1\nout\nerr", is_error: true }] },
      tool_use_result: { stdout: "out", stderr: "err", interrupted: false },
    });
    const [, command, result] = t.completed();
    assert.equal(command!.type, "commandExecution");
    assert.deepEqual(command!.payload, {
      callId: "toolu_b",
      command: "false",
      cwd: fs.realpathSync(t.root),
      output: "out\nerr",
      exitCode: 1,
    });
    assert.equal(result!.type, "toolResult");
    assert.deepEqual(result!.payload, { callId: "toolu_b", toolName: "Bash", success: false, output: "Exit code 1\nout\nerr" });
  });

  it("a denied Bash call gets a toolResult only", () => {
    const t = setUp();
    t.mapper.markDenied("toolu_d");
    t.feed(assistant({ type: "tool_use", id: "toolu_d", name: "Bash", input: { command: "rm -rf /" } }), {
      type: "user",
      message: { content: [{ type: "tool_result", tool_use_id: "toolu_d", content: "declined", is_error: true }] },
    });
    assert.deepEqual(
      t.completed().map((i) => i.type),
      ["toolCall", "toolResult"],
    );
  });

  it("an Edit result is a fileChange with a unified diff, and the turn's diff is reported", () => {
    const t = setUp();
    const file = path.join(t.root, "a.txt");
    t.feed(assistant({ type: "tool_use", id: "toolu_e", name: "Edit", input: { file_path: file, old_string: "b", new_string: "B" } }), {
      type: "user",
      message: { content: [{ type: "tool_result", tool_use_id: "toolu_e", content: "updated" }] },
      tool_use_result: { filePath: file, originalFile: "a\nb\n" },
    });
    const change = t.completed().find((i) => i.type === "fileChange")!;
    assert.equal((change.payload as { path: string }).path, "a.txt");
    assert.equal((change.payload as { kind: string }).kind, "update");
    assert.match((change.payload as { diff: string }).diff, /^-b$\n^\+B$/m);
    assert.equal(t.diffs.length, 1);
    assert.match(t.diffs[0]!, /^diff --git a\/a.txt b\/a.txt/);
  });

  it("TodoWrite reports the plan", () => {
    const t = setUp();
    t.feed(
      assistant({
        type: "tool_use",
        id: "toolu_t",
        name: "TodoWrite",
        input: { todos: [{ content: "x", status: "in_progress", activeForm: "X-ing" }] },
      }),
      {
        type: "user",
        message: { content: [{ type: "tool_result", tool_use_id: "toolu_t", content: "ok" }] },
      },
    );
    assert.deepEqual(t.plans, [[{ step: "x", status: "in_progress" }]]);
  });

  it("finish closes what is still streaming", () => {
    const t = setUp();
    t.feed(
      stream({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      stream({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "cut" } }),
    );
    t.mapper.finish();
    assert.deepEqual(
      t.completed().map((i) => i.payload),
      [{ text: "cut" }],
    );
  });
});

describe("claude-code result and approvals", () => {
  const result = (fields: Record<string, unknown>) =>
    ({ type: "result", subtype: "success", ...fields }) as Extract<CliMessage, { type: "result" }>;

  it("cost: per-result model usage when reported, else the growth of the running total, else unknown", () => {
    assert.equal(
      turnCost(result({ total_cost_usd: 9, model_usage_since_last_result: { a: { costUSD: 0.25 }, b: { costUSD: 0.5 } } }), undefined),
      0.75,
    );
    assert.equal(turnCost(result({ total_cost_usd: 0.75 }), 0.25), 0.5);
    assert.equal(turnCost(result({ total_cost_usd: 0.75 }), undefined), undefined);
  });

  it("usage counts cached tokens as input", () => {
    const usage = resultUsage(
      result({
        usage: {
          input_tokens: 10,
          output_tokens: 5,
          cache_read_input_tokens: 100,
          cache_creation_input_tokens: 1,
          output_tokens_details: { thinking_tokens: 3 },
        },
      }),
      0.1,
    );
    assert.deepEqual(usage, {
      inputTokens: 111,
      outputTokens: 5,
      totalTokens: 116,
      cachedInputTokens: 100,
      reasoningTokens: 3,
      costUsd: 0.1,
    });
  });

  it("error results become backendError", () => {
    assert.equal(resultError(result({ is_error: false })), undefined);
    assert.deepEqual(resultError(result({ subtype: "error_during_execution", is_error: true, errors: ["boom"] })), {
      code: "backendError",
      message: "boom",
    });
    assert.equal(
      resultError(result({ subtype: "error_max_turns", is_error: true }))!.message,
      'Claude Code ended the turn with "error_max_turns".',
    );
  });

  it("permission requests become shell and file approvals", () => {
    const root = tempDir("ask");
    const ws = new Workspace(root);
    const bash = permissionAsk({ subtype: "can_use_tool", tool_name: "Bash", input: { command: " ls " } }, ws);
    assert.deepEqual([bash.approvalType, bash.operation, bash.target, bash.scopeKey], ["shell", " ls ", ws.root, "shell:ls"]);
    const write = permissionAsk(
      { subtype: "can_use_tool", tool_name: "Write", input: { file_path: path.join(ws.root, "d/x.ts"), content: "" } },
      ws,
    );
    assert.deepEqual(
      [write.approvalType, write.operation, write.target, write.scopeKey],
      ["file", "write d/x.ts", path.join(ws.root, "d/x.ts"), "file:d/x.ts"],
    );
    const other = permissionAsk({ subtype: "can_use_tool", tool_name: "WebFetch", input: { url: "https://example.com" } }, ws);
    assert.equal(other.operation, 'WebFetch {"url":"https://example.com"}');
  });

  it("file changes from Write, MultiEdit and an Edit without the original file", () => {
    assert.deepEqual(fileChangeOf("Write", { file_path: "/w/a", content: "x" }, { type: "create", originalFile: null }), {
      path: "/w/a",
      before: null,
      after: "x",
    });
    assert.deepEqual(
      fileChangeOf(
        "MultiEdit",
        {
          file_path: "/w/a",
          edits: [
            { old_string: "a", new_string: "b" },
            { old_string: "c", new_string: "d", replace_all: true },
          ],
        },
        { originalFile: "a c c" },
      ),
      {
        path: "/w/a",
        before: "a c c",
        after: "b d d",
      },
    );
    assert.deepEqual(fileChangeOf("Edit", { file_path: "/w/a", old_string: "o", new_string: "n" }, undefined), {
      path: "/w/a",
      before: "o",
      after: "n",
      partial: true,
    });
  });
});
