// Recovery: turns that were running when their process died are marked failed, at start-up
// or, in a cluster, when a node is found gone. Items completed before the crash stay as they
// are; items that were still streaming are closed with the content their persisted deltas carried.
import type { NewEvent } from "../domain/events.js";
import type { Store } from "../store/store.js";
import { turnEndEvent } from "./turn-end.js";

export interface RecoveryOptions {
  /** The turns' error code. */
  code: "serverRestarted" | "ownerLost";
  /** Takes the turn's thread to close it; false: its turn runs (here, or on a live node). */
  claim: (threadId: string) => Promise<boolean>;
}

/** Closes every unfinished turn in the log that can be claimed; returns how many there were. */
export async function recoverUnfinishedTurns(store: Store, emit: (event: NewEvent) => void, opts: RecoveryOptions): Promise<number> {
  let closed = 0;
  for (const turn of await store.listUnfinishedTurns()) {
    if (!(await opts.claim(turn.threadId))) continue;
    closed++;
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
    const message =
      opts.code === "ownerLost" ? "The cluster node running this turn was lost." : "The server stopped while this turn was running.";
    emit(
      turnEndEvent(
        turn.threadId,
        turn.id,
        { status: "failed", error: { code: opts.code, message } },
        new Date().toISOString(),
        turn.tokenUsage,
      ),
    );
  }
  await store.flush();
  return closed;
}
