// Recovery: turns that were running when their process died are closed, at start-up or, in a
// cluster, when a node is found gone. Items completed before the crash stay as they are; items
// that were still streaming are closed with the content their persisted deltas carried. A lost
// node's tool calls that had no result yet fail (they are never run again); its turn then fails,
// or is continued by the node that took it over.
import type { NewEvent } from "../domain/events.js";
import type { Turn } from "../domain/model.js";
import { TurnRecorder } from "../domain/turn-recorder.js";
import type { Store } from "../store/store.js";
import { turnEndEvent } from "./turn-end.js";

export interface RecoveryOptions {
  /** The turns' error code. */
  code: "serverRestarted" | "ownerLost";
  /** Takes the turn's thread to close it; false: its turn runs (here, or on a live node). */
  claim: (threadId: string) => Promise<boolean>;
  /** Continues the turn (failover: continue); false: it fails. */
  resume?: (turn: Turn) => Promise<boolean>;
}

/** Closes every unfinished turn in the log that can be claimed; returns how many there were. */
export async function recoverUnfinishedTurns(store: Store, emit: (event: NewEvent) => void, opts: RecoveryOptions): Promise<number> {
  let closed = 0;
  for (const turn of await store.listUnfinishedTurns()) {
    if (!(await opts.claim(turn.threadId))) continue;
    // Read again once claimed: its owner may have finished it since the list was read.
    const now = await store.getTurn(turn.id);
    if (now?.status !== "running" && now?.status !== "waitingApproval") continue;
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
    if (opts.code === "ownerLost") {
      const items = await store.listItems(turn.id);
      const answered = new Set(items.flatMap((i) => (i.type === "toolResult" ? [i.payload.callId] : [])));
      const recorder = new TurnRecorder(emit, turn.threadId, turn.id);
      for (const call of items) {
        if (call.type !== "toolCall" || answered.has(call.payload.callId)) continue;
        recorder.record("toolResult", {
          callId: call.payload.callId,
          toolName: call.payload.toolName,
          success: false,
          output: "ownerLost: the cluster node running this tool call was lost; it was not run again.",
        });
      }
      if (await opts.resume?.(turn)) continue;
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
