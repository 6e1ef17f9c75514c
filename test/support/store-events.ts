// Events for store tests: a thread with two turns that exercise every event type.
import type { Item, Plan, Thread, Turn } from "../../src/domain/model.js";
import type { Store } from "../../src/store/store.js";

export function makeThread(id: string, over: Partial<Thread> = {}): Thread {
  return {
    id,
    workspacePath: "/ws/a",
    originChannel: "cli",
    status: "active",
    createdAt: "2026-01-01T00:00:00.000Z",
    lastActiveAt: "2026-01-01T00:00:00.000Z",
    historyMode: "server",
    mode: "agent",
    metadata: {},
    queuedInputs: [],
    ...over,
  };
}

export function makeTurn(id: string, threadId: string): Turn {
  return { id, threadId, status: "running", startedAt: "2026-01-01T00:01:00.000Z", input: [{ type: "text", text: "hi" }], model: "m1" };
}

export function agentItem(id: string, threadId: string, turnId: string, text: string, done = false): Item {
  const item: Item = {
    id,
    threadId,
    turnId,
    type: "agentMessage",
    status: done ? "completed" : "started",
    createdAt: "2026-01-01T00:01:01.000Z",
    payload: { text },
  };
  if (done) item.completedAt = "2026-01-01T00:01:02.000Z";
  return item;
}

/** A thread with two turns exercising every event type. */
export function populate(store: Pick<Store, "append">, threadId = "t1"): void {
  const plan: Plan = { steps: [{ step: "do it", status: "in_progress" }], updatedAt: "2026-01-01T00:01:03.000Z", turnId: "u1" };
  store.append({ type: "thread.created", threadId, data: { thread: makeThread(threadId, { userId: "alice", metadata: { k: 1 } }) } });
  store.append({ type: "thread.resumed", threadId, data: { lastActiveAt: "2026-01-01T00:00:30.000Z" } });
  store.append({ type: "thread.renamed", threadId, data: { displayName: "Hello" } });
  store.append({ type: "thread.configured", threadId, data: { configuration: { model: "m1", approvalPolicy: "autoApprove" } } });
  store.append({ type: "thread.modeChanged", threadId, data: { mode: "plan" } });
  store.append({ type: "thread.statusChanged", threadId, data: { status: "paused" } });
  store.append({ type: "thread.runtimeChanged", threadId, data: { runtime: { running: true, waitingOnApproval: false } } });
  store.append({ type: "thread.backendSession", threadId, data: { session: { backend: "claude-code", sessionId: "s1" } } });
  store.append({
    type: "thread.queueUpdated",
    threadId,
    data: { queuedInputs: [{ id: "q1", input: [{ type: "text", text: "later" }], createdAt: "2026-01-01T00:00:40.000Z" }] },
  });
  store.append({ type: "turn.started", threadId, data: { turn: makeTurn("u1", threadId) } });
  store.append({ type: "item.started", threadId, data: { item: agentItem("i1", threadId, "u1", "") } });
  store.append({ type: "item.delta", threadId, data: { turnId: "u1", itemId: "i1", kind: "agentMessage", delta: "Hel" } });
  store.append({ type: "item.delta", threadId, data: { turnId: "u1", itemId: "i1", kind: "agentMessage", delta: "lo" } });
  store.append({ type: "item.completed", threadId, data: { item: agentItem("i1", threadId, "u1", "Hello", true) } });
  store.append({ type: "turn.diffUpdated", threadId, data: { turnId: "u1", diff: "--- a\n+++ b\n" } });
  store.append({ type: "turn.planUpdated", threadId, data: { turnId: "u1", plan } });
  store.append({
    type: "approval.resolved",
    threadId,
    data: { turnId: "u1", itemId: "i1", requestId: "r1", decision: "acceptAlways", source: "client" },
  });
  store.append({ type: "approval.ruleAdded", threadId, data: { workspacePath: "/ws/a", scopeKey: "shell:ls" } });
  store.append({ type: "usage.updated", threadId, data: { turnId: "u1", usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } } });
  store.append({ type: "turn.completed", threadId, data: { turnId: "u1", completedAt: "2026-01-01T00:02:00.000Z" } });
  store.append({ type: "turn.started", threadId, data: { turn: makeTurn("u2", threadId) } });
  store.append({ type: "item.completed", threadId, data: { item: agentItem("i2", threadId, "u2", "x", true) } });
  store.append({
    type: "turn.failed",
    threadId,
    data: { turnId: "u2", completedAt: "2026-01-01T00:03:00.000Z", error: { code: "rateLimited", message: "slow down", httpStatus: 429 } },
  });
  store.append({ type: "turn.started", threadId, data: { turn: makeTurn("u3", threadId) } });
  store.append({ type: "turn.cancelled", threadId, data: { turnId: "u3", completedAt: "2026-01-01T00:04:00.000Z", reason: "user" } });
}
