// The ACP face's pure mapping: runtime items/events to session updates, prompts to input,
// modes, permission outcomes and turn ends.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type * as acp from "@agentclientprotocol/sdk";
import type { RuntimeEvent } from "../../../src/domain/events.js";
import type { Item, ItemPayloads, ItemType } from "../../../src/domain/model.js";
import { fileDiff } from "../../../src/tools/diff.js";
import {
  SessionUpdateMapper,
  decisionFor,
  diffContents,
  modeIdOf,
  modeSettings,
  replayUpdates,
  stopReasonFor,
  toInput,
  usageUpdate,
} from "../../../src/faces/acp/wire.js";

let seq = 0;
function item<T extends ItemType>(type: T, payload: ItemPayloads[T], id = `item_${++seq}`): Item {
  return { id, threadId: "thr", turnId: "turn", type, status: "completed", createdAt: "t", payload } as Item;
}
function event(type: RuntimeEvent["type"], data: unknown): RuntimeEvent {
  return { type, threadId: "thr", data, seq: ++seq, ts: "t" } as RuntimeEvent;
}

describe("ACP wire: events", () => {
  it("streams message deltas and does not repeat a streamed message on completion", () => {
    const m = new SessionUpdateMapper("/ws");
    const msg = item("agentMessage", { text: "Hello" }, "item_msg");
    assert.deepEqual(m.fromEvent(event("item.delta", { turnId: "turn", itemId: "item_msg", kind: "agentMessage", delta: "Hel" }), true), [
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hel" }, messageId: "item_msg" },
    ]);
    assert.deepEqual(m.fromEvent(event("item.completed", { item: msg }), true), []);
    const thought = m.fromEvent(event("item.delta", { turnId: "turn", itemId: "item_r", kind: "reasoning", delta: "hmm" }), true);
    assert.equal(thought[0]!.sessionUpdate, "agent_thought_chunk");
    assert.deepEqual(m.fromEvent(event("item.delta", { turnId: "turn", itemId: "x", kind: "toolArguments", delta: "{" }), true), []);
  });

  it("leaves out the echo of the client's own prompt, but not another client's", () => {
    const m = new SessionUpdateMapper("/ws");
    const user = item("userMessage", { text: "hi", input: [{ type: "text", text: "hi" }] });
    assert.deepEqual(m.fromEvent(event("item.completed", { item: user }), true), []);
    assert.equal(m.fromEvent(event("item.completed", { item: user }), false)[0]!.sessionUpdate, "user_message_chunk");
  });

  it("announces a tool call once, then updates it: progress, diff, result", () => {
    const m = new SessionUpdateMapper("/ws");
    const call = item("toolCall", {
      callId: "c1",
      toolName: "edit",
      argumentsText: "",
      arguments: { path: "a.txt", oldString: "x", newString: "y" },
    });
    const [announced] = m.fromEvent(event("item.completed", { item: call }), true);
    assert.deepEqual(announced, {
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "Edit a.txt",
      kind: "edit",
      status: "pending",
      locations: [{ path: "/ws/a.txt" }],
      rawInput: { path: "a.txt", oldString: "x", newString: "y" },
    });
    const running = m.fromEvent(
      event("item.started", { item: { ...item("toolExecution", { callId: "c1", toolName: "edit" }), status: "started" } }),
      true,
    );
    assert.deepEqual(running, [{ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "in_progress" }]);
    const change = item("fileChange", { callId: "c1", path: "a.txt", kind: "update", diff: fileDiff("a.txt", "a\nx\nb\n", "a\ny\nb\n") });
    const [diff] = m.fromEvent(event("item.completed", { item: change }), true) as Array<acp.ToolCallUpdate>;
    assert.deepEqual(diff!.content, [{ type: "diff", path: "/ws/a.txt", oldText: "a\nx\nb", newText: "a\ny\nb" }]);
    const result = item("toolResult", { callId: "c1", toolName: "edit", success: true, output: "Edited a.txt" });
    // The diff stays: the result only sets the status.
    assert.deepEqual(m.fromEvent(event("item.completed", { item: result }), true), [
      { sessionUpdate: "tool_call_update", toolCallId: "c1", status: "completed" },
    ]);
  });

  it("shows command output, or the client's terminal instead of it", () => {
    const m = new SessionUpdateMapper("/ws");
    m.fromItem(item("toolCall", { callId: "c2", toolName: "bash", argumentsText: "", arguments: { command: "ls" } }));
    const [out] = m.fromItem(
      item("commandExecution", { callId: "c2", command: "ls", cwd: "/ws", output: "a\nb", exitCode: 0 }),
    ) as acp.ToolCallUpdate[];
    assert.deepEqual(out!.content, [{ type: "content", content: { type: "text", text: "```\na\nb\n```" } }]);
    const failed = m.fromItem(item("toolResult", { callId: "c2", toolName: "bash", success: false, output: "exit code 1" }));
    assert.equal((failed[0] as acp.ToolCallUpdate).status, "failed");

    const t = new SessionUpdateMapper("/ws");
    t.fromItem(item("toolCall", { callId: "c3", toolName: "bash", argumentsText: "", arguments: { command: "make" } }));
    assert.deepEqual(t.terminal("c3", "term_1"), {
      sessionUpdate: "tool_call_update",
      toolCallId: "c3",
      content: [{ type: "terminal", terminalId: "term_1" }],
      status: "in_progress",
    });
    const [done] = t.fromItem(
      item("commandExecution", { callId: "c3", command: "make", cwd: "/ws", output: "built", exitCode: 0 }),
    ) as acp.ToolCallUpdate[];
    assert.equal(done!.content, undefined, "the terminal stays");
  });

  it("replays history whole: messages, tool calls and the plan", () => {
    const m = new SessionUpdateMapper("/ws");
    const items = [
      item("userMessage", { text: "do it", input: [] }),
      item("reasoningContent", { text: "thinking" }),
      item("agentMessage", { text: "done" }),
      item("toolCall", { callId: "c4", toolName: "read_file", argumentsText: "{}", arguments: { path: "x" } }),
      item("toolResult", { callId: "c4", toolName: "read_file", success: true, output: "1\tx" }),
      item("approvalRequest", {
        requestId: "r",
        callId: "c4",
        approvalType: "file",
        operation: "o",
        target: "t",
        scopeKey: "k",
        reason: "r",
      }),
    ];
    const updates = replayUpdates(m, [{ id: "turn", items }], { steps: [{ step: "read", status: "completed" }], updatedAt: "t" });
    assert.deepEqual(
      updates.map((u) => u.sessionUpdate),
      ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "plan"],
    );
    assert.deepEqual(updates.at(-1), { sessionUpdate: "plan", entries: [{ content: "read", status: "completed", priority: "medium" }] });
  });

  it("maps usage to context used and window size, with the cost when priced", () => {
    const usage = { inputTokens: 300, outputTokens: 50, totalTokens: 350, costUsd: 0.01 };
    const delta = { inputTokens: 200, outputTokens: 20, totalTokens: 220 };
    assert.deepEqual(usageUpdate(usage, delta, 1000), {
      sessionUpdate: "usage_update",
      used: 220,
      size: 1000,
      cost: { amount: 0.01, currency: "USD" },
    });
  });
});

describe("ACP wire: requests and answers", () => {
  it("turns prompt blocks into runtime input", () => {
    assert.deepEqual(
      toInput([
        { type: "text", text: "look" },
        { type: "resource_link", name: "a.ts", uri: "file:///ws/a%20b.ts" },
        { type: "resource", resource: { uri: "file:///ws/c.ts", text: "const c = 1;" } },
        { type: "image", data: "AAA", mimeType: "image/png" },
      ]),
      [
        { type: "text", text: "look" },
        { type: "fileRef", path: "/ws/a b.ts" },
        { type: "text", text: '<context uri="file:///ws/c.ts">\nconst c = 1;\n</context>' },
        { type: "image", url: "data:image/png;base64,AAA" },
      ],
    );
  });

  it("maps modes both ways", () => {
    for (const id of ["default", "acceptEdits", "bypassPermissions", "plan"] as const) {
      const { configuration, mode } = modeSettings(id);
      assert.equal(modeIdOf({ mode, configuration }), id);
    }
    assert.equal(modeIdOf({ mode: "agent", configuration: { approvalPolicy: "interrupt" } }), "default");
  });

  it("maps permission outcomes to decisions", () => {
    assert.equal(decisionFor({ outcome: "selected", optionId: "allow_once" }), "accept");
    assert.equal(decisionFor({ outcome: "selected", optionId: "allow_always" }), "acceptAlways");
    assert.equal(decisionFor({ outcome: "selected", optionId: "reject_once" }), "decline");
    assert.equal(decisionFor({ outcome: "selected", optionId: "reject_always" }), "decline");
    assert.equal(decisionFor({ outcome: "selected", optionId: "something else" }), "decline");
    assert.equal(decisionFor({ outcome: "cancelled" }), "cancel");
  });

  it("maps turn ends to stop reasons, and other failures to errors", () => {
    assert.equal(stopReasonFor({ status: "completed" }), "end_turn");
    assert.equal(stopReasonFor({ status: "cancelled" }), "cancelled");
    assert.equal(stopReasonFor({ status: "failed", error: { code: "tooManySteps", message: "m" } }), "max_turn_requests");
    assert.deepEqual(stopReasonFor({ status: "failed", error: { code: "rateLimited", message: "slow" } }), {
      error: { code: "rateLimited", message: "slow" },
    });
  });

  it("renders a new file as one diff without old text", () => {
    assert.deepEqual(diffContents("/ws/n.txt", fileDiff("n.txt", null, "a\nb\n"), "add"), [
      { type: "diff", path: "/ws/n.txt", oldText: null, newText: "a\nb" },
    ]);
  });
});
