// The ACP session-update mapper on its own: updates in, recorder events and reports out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type * as acp from "@agentclientprotocol/sdk";
import type { NewEvent } from "../../src/domain/events.js";
import type { Item, PlanStep } from "../../src/domain/model.js";
import { TurnRecorder } from "../../src/domain/turn-recorder.js";
import { AcpTurnMapper } from "../../src/backends/acp/mapper.js";
import { pickOption } from "../../src/backends/acp/session.js";

const WS = "/work/space";

function setup() {
  const events: NewEvent[] = [];
  const plans: Array<{ steps: PlanStep[] }> = [];
  const diffs: string[] = [];
  const terminals: string[] = [];
  const recorder = new TurnRecorder((e) => events.push(e), "t", "turn");
  const mapper = new AcpTurnMapper({ recorder, reportPlan: (p) => plans.push(p), reportDiff: (d) => diffs.push(d) }, WS, (id) =>
    terminals.push(id),
  );
  const completed = (): Item[] => events.flatMap((e) => (e.type === "item.completed" ? [(e.data as { item: Item }).item] : []));
  const deltas = (): string[] => events.flatMap((e) => (e.type === "item.delta" ? [(e.data as { delta: string }).delta] : []));
  return { mapper, plans, diffs, terminals, completed, deltas };
}

const text = (sessionUpdate: "agent_message_chunk" | "agent_thought_chunk", t: string): acp.SessionUpdate => ({
  sessionUpdate,
  content: { type: "text", text: t },
});

describe("AcpTurnMapper", () => {
  it("streams a thought and a message; a tool call in between starts a new message", () => {
    const t = setup();
    t.mapper.handle(text("agent_thought_chunk", "Hmm"));
    t.mapper.handle(text("agent_message_chunk", "Before "));
    t.mapper.handle(text("agent_message_chunk", "the call."));
    t.mapper.handle({ sessionUpdate: "tool_call", toolCallId: "c1", title: "Search", kind: "search", status: "completed", content: [] });
    t.mapper.handle(text("agent_message_chunk", "After."));
    t.mapper.finish();
    assert.deepEqual(
      t.completed().map((i) => [i.type, (i.payload as { text?: string }).text]),
      [
        ["reasoningContent", "Hmm"],
        ["agentMessage", "Before the call."],
        ["toolCall", undefined],
        ["toolResult", undefined],
        ["agentMessage", "After."],
      ],
    );
    assert.deepEqual(t.deltas(), ["Hmm", "Before ", "the call.", "After."]);
  });

  it("an execute call is a commandExecution: fenced text output unwrapped, exit code kept across a later text rawOutput", () => {
    const t = setup();
    t.mapper.handle({
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "`ls`",
      kind: "execute",
      status: "pending",
      rawInput: { command: "ls -la" },
    });
    t.mapper.handle({
      sessionUpdate: "tool_call_update",
      toolCallId: "c1",
      content: [{ type: "content", content: { type: "text", text: "```\na\nb\n```" } }],
      rawOutput: { exitCode: 2 },
    });
    t.mapper.handle({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "failed", rawOutput: "a\nb\nexit code 2" });
    const [command] = t.completed();
    assert.equal(command!.type, "commandExecution");
    assert.deepEqual(command!.payload, { callId: "c1", command: "ls -la", cwd: WS, output: "a\nb", exitCode: 2 });
  });

  it("a command in a terminal is handed to the terminal follower once, and not filled from text content", () => {
    const t = setup();
    t.mapper.handle({
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "run",
      kind: "execute",
      rawInput: { command: ["npm", "test"] },
    });
    t.mapper.handle({ sessionUpdate: "tool_call_update", toolCallId: "c1", content: [{ type: "terminal", terminalId: "term_1" }] });
    t.mapper.handle({
      sessionUpdate: "tool_call_update",
      toolCallId: "c1",
      content: [{ type: "terminal", terminalId: "term_1" }],
      status: "completed",
    });
    assert.deepEqual(t.terminals, ["term_1"]);
    assert.equal((t.completed()[0]!.payload as { command: string }).command, "npm test");
  });

  it("a completed edit becomes fileChange items with diffs relative to the workspace, and the turn's diff", () => {
    const t = setup();
    t.mapper.handle({
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "Edit",
      kind: "edit",
      status: "pending",
      locations: [{ path: `${WS}/a.txt` }],
    });
    t.mapper.handle({
      sessionUpdate: "tool_call_update",
      toolCallId: "c1",
      status: "completed",
      content: [
        { type: "diff", path: `${WS}/a.txt`, oldText: "one\n", newText: "two\n" },
        { type: "diff", path: `${WS}/new.txt`, oldText: null, newText: "fresh\n" },
      ],
    });
    const changes = t.completed().filter((i) => i.type === "fileChange");
    assert.deepEqual(
      changes.map((i) => [(i.payload as { path: string }).path, (i.payload as { kind: string }).kind]),
      [
        ["a.txt", "update"],
        ["new.txt", "add"],
      ],
    );
    assert.match(t.diffs.at(-1)!, /-one\n\+two/);
    assert.match(t.diffs.at(-1)!, /new file mode/);
  });

  it("a failed edit changes nothing; a plan replaces the plan; finish closes what is open", () => {
    const t = setup();
    t.mapper.handle({
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "Edit",
      kind: "edit",
      content: [{ type: "diff", path: "x", oldText: "a", newText: "b" }],
    });
    t.mapper.handle({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "failed" });
    t.mapper.handle({ sessionUpdate: "plan", entries: [{ content: "Step", priority: "high", status: "in_progress" }] });
    t.mapper.handle({
      sessionUpdate: "tool_call",
      toolCallId: "c2",
      title: "`sleep 9`",
      kind: "execute",
      rawInput: { command: "sleep 9" },
    });
    t.mapper.handle(text("agent_message_chunk", "waiting"));
    t.mapper.finish();
    assert.deepEqual(t.plans, [{ steps: [{ step: "Step", status: "in_progress" }] }]);
    assert.deepEqual(
      t.completed().map((i) => i.type),
      ["agentMessage", "commandExecution"],
    );
    assert.equal((t.completed()[1]!.payload as { exitCode: null }).exitCode, null);
  });

  it("permission asks: execute is a shell ask by command, edit a file ask by path, anything else by title", () => {
    const t = setup();
    assert.deepEqual(t.mapper.permissionAsk({ toolCallId: "c1", kind: "execute", title: "Run", rawInput: { command: "make" } }), {
      approvalType: "shell",
      operation: "make",
      target: WS,
      scopeKey: "shell:make",
      reason: "The agent wants to run a command.",
    });
    const edit = t.mapper.permissionAsk({ toolCallId: "c2", kind: "edit", locations: [{ path: `${WS}/src/a.ts` }] });
    assert.deepEqual(
      [edit.approvalType, edit.operation, edit.target, edit.scopeKey],
      ["file", "edit src/a.ts", `${WS}/src/a.ts`, "file:src/a.ts"],
    );
    const other = t.mapper.permissionAsk({ toolCallId: "c3", kind: "fetch", title: "Fetch example.com" });
    assert.deepEqual([other.approvalType, other.scopeKey], ["shell", "tool:Fetch example.com"]);
  });

  it("usage_update keeps the session's cumulative USD cost", () => {
    const t = setup();
    t.mapper.handle({ sessionUpdate: "usage_update", used: 10, size: 100, cost: { amount: 0.5, currency: "USD" } });
    t.mapper.handle({ sessionUpdate: "usage_update", used: 20, size: 100, cost: { amount: 9, currency: "EUR" } });
    assert.equal(t.mapper.costUsd, 0.5);
  });
});

describe("permission options", () => {
  const all: acp.PermissionOption[] = [
    { optionId: "a1", name: "Allow", kind: "allow_once" },
    { optionId: "a2", name: "Always", kind: "allow_always" },
    { optionId: "r1", name: "Reject", kind: "reject_once" },
    { optionId: "r2", name: "Never", kind: "reject_always" },
  ];

  it("pick the option of the decision's kind, falling back to its sibling", () => {
    assert.equal(pickOption(all, "accept")?.optionId, "a1");
    assert.equal(pickOption(all, "acceptForSession")?.optionId, "a2");
    assert.equal(pickOption(all, "acceptAlways")?.optionId, "a2");
    assert.equal(pickOption(all, "decline")?.optionId, "r1");
    assert.equal(pickOption(all, "cancel"), undefined);
    assert.equal(pickOption([all[1]!, all[3]!], "accept")?.optionId, "a2");
    assert.equal(pickOption([all[0]!], "decline"), undefined);
  });
});
