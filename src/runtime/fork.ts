// Forking: a new thread with a copy of another's history, every finished turn up to and
// including a given one. Items get new ids; a compaction notice names items by id, so those
// references follow.
import { newId, newThreadId } from "../ids.js";
import type { TurnOutcome } from "../backends/backend.js";
import { RuntimeError } from "../domain/errors.js";
import type { NewEvent } from "../domain/events.js";
import type { Item, Thread } from "../domain/model.js";
import type { Store } from "../store/store.js";
import { turnEndEvent } from "./turn-end.js";

/** Appends the copy's events and returns the new thread's id. */
export async function forkThread(store: Store, emit: (event: NewEvent) => void, source: Thread, atTurnId?: string): Promise<string> {
  const threadId = source.id;
  const turns = await store.listTurns(threadId, { withItems: true });
  const cut = atTurnId === undefined ? turns.length : turns.findIndex((t) => t.id === atTurnId) + 1;
  if (atTurnId !== undefined && cut === 0)
    throw new RuntimeError("turnNotFound", `Turn ${atTurnId} is not part of thread ${threadId}.`, { threadId, turnId: atTurnId });
  const now = new Date().toISOString();
  const newIds = new Map<string, string>();
  const remapIds = (copy: Item, oldId: string): Item => {
    newIds.set(oldId, copy.id);
    if (copy.type !== "systemNotice") return copy;
    const { coversThroughItemId, keptUserItemId } = copy.payload;
    return {
      ...copy,
      payload: {
        ...copy.payload,
        ...(coversThroughItemId ? { coversThroughItemId: newIds.get(coversThroughItemId) ?? coversThroughItemId } : {}),
        ...(keptUserItemId ? { keptUserItemId: newIds.get(keptUserItemId) ?? keptUserItemId } : {}),
      },
    };
  };
  const { plan: _plan, ...rest } = source;
  const thread: Thread = {
    ...rest,
    id: newThreadId(),
    createdAt: now,
    lastActiveAt: now,
    queuedInputs: [],
    forkedFrom: { threadId, ...(atTurnId ? { turnId: atTurnId } : {}) },
  };
  emit({ type: "thread.created", threadId: thread.id, data: { thread } });
  for (const turn of turns.slice(0, cut)) {
    if (turn.status === "running" || turn.status === "waitingApproval") continue;
    const { items = [], ...copy } = turn;
    const turnId = newId("turn");
    emit({ type: "turn.started", threadId: thread.id, data: { turn: { ...copy, id: turnId, threadId: thread.id, status: "running" } } });
    for (const item of items) {
      emit({
        type: "item.completed",
        threadId: thread.id,
        data: { item: remapIds({ ...item, id: newId("item"), threadId: thread.id, turnId }, item.id) },
      });
    }
    const outcome: TurnOutcome =
      turn.status === "completed"
        ? { status: "completed" }
        : turn.status === "failed"
          ? { status: "failed", error: turn.error ?? { code: "unknown", message: "failed" } }
          : { status: "cancelled", reason: turn.cancelReason ?? "cancelled" };
    emit(turnEndEvent(thread.id, turnId, outcome, turn.completedAt ?? now, turn.tokenUsage));
  }
  return thread.id;
}
