// The AppServer face's pure mapping: runtime events to notifications, filtered by what the
// client declared at initialize; every notification it produces validates against the table.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RuntimeEvent } from "../../../src/domain/events.js";
import type { Item, ItemPayloads, ItemType, Thread, Turn } from "../../../src/domain/model.js";
import { AppServerNotifications } from "../../../src/faces/appserver/protocol.js";
import { ItemFilter, toNotification, wireThread, type EventContext, type Notification } from "../../../src/faces/appserver/wire.js";

const NOW = "2026-11-24T12:00:00.000Z";
let seq = 0;

const thread: Thread = {
  id: "thr",
  workspacePath: "/ws",
  originChannel: "appserver",
  status: "active",
  createdAt: NOW,
  lastActiveAt: NOW,
  historyMode: "server",
  mode: "agent",
  metadata: {},
  queuedInputs: [],
  plan: { steps: [], updatedAt: NOW },
};
const turn: Turn = {
  id: "turn",
  threadId: "thr",
  status: "completed",
  startedAt: NOW,
  completedAt: NOW,
  input: [{ type: "text", text: "hi" }],
};

const ctx: EventContext = {
  thread: async (id) => (id === "thr" ? wireThread(thread, { running: false, waitingOnApproval: false }) : undefined),
  turn: async (id) => (id === "turn" ? turn : undefined),
};

function item<T extends ItemType>(type: T, payload: ItemPayloads[T]): Item {
  return { id: `item_${++seq}`, threadId: "thr", turnId: "turn", type, status: "completed", createdAt: NOW, payload } as Item;
}
function event(type: RuntimeEvent["type"], data: unknown, threadId = "thr"): RuntimeEvent {
  return { type, threadId, data, seq: ++seq, ts: NOW } as RuntimeEvent;
}

/** Maps and checks the result against the protocol table's schema for its method. */
async function map(e: RuntimeEvent, filter = new ItemFilter({})): Promise<Notification | undefined> {
  const n = await toNotification(e, filter, ctx);
  if (n) {
    const schema = AppServerNotifications[n.method as keyof typeof AppServerNotifications];
    assert.ok(schema, `${n.method} is in the table`);
    const parsed = schema.safeParse(n.params);
    assert.ok(parsed.success, `${n.method}: ${JSON.stringify(parsed.error?.issues)}`);
  }
  return n;
}

describe("AppServer wire: events to notifications", () => {
  it("carries the thread and seq, and drops the plan from the thread", async () => {
    const n = await map(event("thread.created", { thread }));
    assert.equal(n?.method, "thread/started");
    assert.equal(n?.params.seq, seq);
    assert.equal((n?.params.thread as Record<string, unknown>).plan, undefined);
  });

  it("sends nothing for a thread or turn deleted before delivery", async () => {
    assert.equal(await map(event("thread.created", { thread: { ...thread, id: "gone" } }, "gone")), undefined);
    assert.equal(await map(event("turn.completed", { turnId: "gone", completedAt: NOW })), undefined);
  });

  it("maps turn ends with the turn read from the runtime", async () => {
    assert.equal((await map(event("turn.completed", { turnId: "turn", completedAt: NOW })))?.method, "turn/completed");
    const failed = await map(event("turn.failed", { turnId: "turn", completedAt: NOW, error: { code: "providerError", message: "boom" } }));
    assert.deepEqual(failed?.params.error, { code: "providerError", message: "boom" });
    assert.equal(
      (await map(event("turn.cancelled", { turnId: "turn", completedAt: NOW, reason: "interrupted" })))?.params.reason,
      "interrupted",
    );
  });

  it("streams each delta kind to its own method", async () => {
    const delta = (kind: string, extra: object = {}) => event("item.delta", { turnId: "turn", itemId: "i", kind, delta: "x", ...extra });
    assert.equal((await map(delta("agentMessage")))?.method, "item/agentMessage/delta");
    assert.equal((await map(delta("reasoning")))?.method, "item/reasoning/delta");
    assert.equal((await map(delta("toolArguments")))?.method, "item/toolCall/argumentsDelta");
    const withOutput = new ItemFilter({ commandExecutionStreaming: true });
    const output = await map(delta("commandOutput", { stream: "stderr" }), withOutput);
    assert.equal(output?.method, "item/commandExecution/outputDelta");
    assert.equal(output?.params.stream, "stderr");
  });

  it("filters by the client's capabilities", async () => {
    const command = item("commandExecution", { callId: "c", command: "ls", cwd: "/ws", output: "" });
    assert.equal(await map(event("item.completed", { item: command })), undefined, "no commandExecutionStreaming: no command items");
    assert.equal(
      (await map(event("item.completed", { item: command }), new ItemFilter({ commandExecutionStreaming: true })))?.method,
      "item/completed",
    );
    // A thread read leaves out the same types in the store.
    assert.deepEqual(new ItemFilter({}).unwantedItemTypes, ["commandExecution", "toolExecution"]);
    assert.deepEqual(new ItemFilter({ commandExecutionStreaming: true, toolExecutionLifecycle: true }).unwantedItemTypes, []);
    const noStreaming = new ItemFilter({ streamingSupport: false });
    assert.equal(await map(event("item.delta", { turnId: "turn", itemId: "i", kind: "agentMessage", delta: "x" }), noStreaming), undefined);
    assert.equal(
      (await map(event("item.completed", { item: item("agentMessage", { text: "done" }) }), noStreaming))?.method,
      "item/completed",
    );
  });

  it("reports usage per model call only, and keeps rules to itself", async () => {
    const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };
    assert.equal(await map(event("usage.updated", { turnId: "turn", usage })), undefined, "older logs have no per-call figure");
    const n = await map(event("usage.updated", { turnId: "turn", usage, delta: usage }));
    assert.deepEqual([n?.method, n?.params.total], ["item/usage/delta", usage]);
    assert.equal(await map(event("approval.ruleAdded", { workspacePath: "/ws", scopeKey: "shell:ls" })), undefined);
  });

  it("maps every kind of item to a valid item notification", async () => {
    const items: Item[] = [
      item("userMessage", { text: "hi", input: [{ type: "text", text: "hi" }] }),
      item("agentMessage", { text: "hello" }),
      item("reasoningContent", { text: "hmm" }),
      item("toolCall", { callId: "c", toolName: "read_file", argumentsText: "{}" }),
      item("toolResult", { callId: "c", toolName: "read_file", success: true, output: "x" }),
      item("fileChange", { callId: "c", path: "a.txt", kind: "add", diff: "+x" }),
      item("error", { code: "e", message: "m" }),
      item("systemNotice", { kind: "compaction", message: "m" }),
    ];
    for (const it of items) assert.equal((await map(event("item.started", { item: it })))?.method, "item/started");
  });
});
