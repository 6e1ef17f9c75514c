// The claude face's pure mapping: permission modes, prompts, turn status and runtime events to
// notifications; every notification it produces validates against the protocol table.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RuntimeEvent } from "../../../src/domain/events.js";
import type { Item, ItemPayloads, ItemType, Turn } from "../../../src/domain/model.js";
import { ClaudeNotifications } from "../../../src/faces/claude/protocol.js";
import {
  millis,
  permissionConfiguration,
  permissionMode,
  storedItem,
  toInput,
  toNotifications,
  turnStatus,
  type TurnLookup,
} from "../../../src/faces/claude/wire.js";

const NOW = "2026-11-24T12:00:00.000Z";
let seq = 0;

function item<T extends ItemType>(type: T, payload: ItemPayloads[T]): Item {
  return { id: `item_${++seq}`, threadId: "thr", turnId: "turn", type, status: "completed", createdAt: NOW, payload } as Item;
}
function event(type: RuntimeEvent["type"], data: unknown): RuntimeEvent {
  return { type, threadId: "thr", data, seq: ++seq, ts: NOW } as RuntimeEvent;
}

const turn: Turn = {
  id: "turn",
  threadId: "thr",
  status: "completed",
  startedAt: NOW,
  input: [{ type: "text", text: "hi" }],
  items: [item("userMessage", { text: "hi", input: [] }), item("agentMessage", { text: "hello" })],
};
const lookup: TurnLookup = async (id) => (id === "turn" ? turn : undefined);

async function map(e: RuntimeEvent) {
  const notes = await toNotifications(e, lookup);
  for (const n of notes) {
    const schema = ClaudeNotifications[n.method];
    const parsed = schema.safeParse(n.params);
    assert.ok(parsed.success, `${n.method}: ${JSON.stringify(parsed.error?.issues)}`);
  }
  return notes;
}

describe("claude wire: permission modes", () => {
  it("round-trips every mode through the thread's configuration", () => {
    for (const mode of ["default", "acceptEdits", "bypassPermissions"] as const) {
      assert.equal(permissionMode(permissionConfiguration(mode)), mode);
    }
    assert.equal(permissionMode({ approvalPolicy: "interrupt" }), "default", "a policy this face cannot name reads as default");
  });
});

describe("claude wire: prompts and turns", () => {
  it("turns text and image blocks into runtime input", () => {
    assert.deepEqual(toInput("hi"), [{ type: "text", text: "hi" }]);
    assert.deepEqual(toInput([{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAA" } }]), [
      { type: "image", url: "data:image/png;base64,AAA" },
    ]);
  });

  it("names turn states in the protocol's words, with epoch milliseconds", () => {
    assert.equal(turnStatus("waitingApproval"), "active");
    assert.equal(turnStatus("cancelled"), "interrupted");
    assert.equal(turnStatus("failed"), "error");
    assert.equal(millis(NOW), Date.parse(NOW));
  });

  it("hides items the protocol has no place for", () => {
    assert.equal(storedItem(item("userMessage", { text: "hi", input: [] })), undefined);
    assert.equal(storedItem(item("systemNotice", { kind: "compaction", message: "m" })), undefined);
    assert.ok(storedItem(item("agentMessage", { text: "hello" })));
  });
});

describe("claude wire: events to notifications", () => {
  it("streams text and thinking deltas, and nothing for tool arguments", async () => {
    const delta = async (kind: string) => await map(event("item.delta", { turnId: "turn", itemId: "i", kind, delta: "x" }));
    assert.deepEqual((await delta("agentMessage"))[0]?.params, {
      thread_id: "thr",
      turn_id: "turn",
      item_id: "i",
      delta: { type: "text", text: "x" },
    });
    assert.equal(((await delta("reasoning"))[0]?.params as { delta: { type: string } }).delta.type, "thinking");
    assert.deepEqual(await delta("toolArguments"), []);
  });

  it("ends a failed turn with turn/error and then turn/completed, counting visible items", async () => {
    const notes = await map(event("turn.failed", { turnId: "turn", completedAt: NOW, error: { code: "providerError", message: "boom" } }));
    assert.deepEqual(
      notes.map((n) => n.method),
      ["turn/error", "turn/completed"],
    );
    assert.equal((notes[1]!.params as { status: string; items_count: number }).status, "error");
    assert.equal((notes[1]!.params as { items_count: number }).items_count, 1, "the prompt is not an item here");
  });

  it("maps a completed item to item/created", async () => {
    const [n] = await map(
      event("item.completed", { item: item("toolCall", { callId: "c", toolName: "bash", argumentsText: '{"command":"ls"}' }) }),
    );
    assert.equal(n?.method, "item/created");
  });
});
