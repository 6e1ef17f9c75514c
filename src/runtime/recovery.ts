// Start-up recovery: turns that were running when the process died are marked failed. Items
// completed before the crash stay as they are; items that were still streaming are closed with
// the content their persisted deltas carried.
import type { NewEvent } from "../domain/events.js";
import type { Store } from "../store/store.js";
import { turnEndEvent } from "./turn-end.js";

/** Closes every unfinished turn in the log; returns how many there were. */
export async function recoverUnfinishedTurns(store: Store, emit: (event: NewEvent) => void): Promise<number> {
  const unfinished = await store.listUnfinishedTurns();
  for (const turn of unfinished) {
    for (const item of await store.listItems(turn.id)) {
      if (item.status === "completed") continue;
      const streamed = await store.deltasOf(item.id);
      const payload = { ...item.payload } as Record<string, unknown>;
      if (item.type === "agentMessage" || item.type === "reasoningContent") payload.text = streamed;
      if (item.type === "commandExecution") Object.assign(payload, { output: streamed, interrupted: true });
      if (item.type === "toolCall") payload.argumentsText = streamed;
      const completed = { ...item, payload, status: "completed", completedAt: new Date().toISOString() } as typeof item;
      emit({ type: "item.completed", threadId: turn.threadId, data: { item: completed } });
    }
    const error = { code: "serverRestarted", message: "The server stopped while this turn was running." };
    emit(turnEndEvent(turn.threadId, turn.id, { status: "failed", error }, new Date().toISOString(), turn.tokenUsage));
  }
  await store.flush();
  return unfinished.length;
}
