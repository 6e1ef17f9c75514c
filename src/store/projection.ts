// What each event changes in the derived tables (threads, turns, items, approval_rules), said
// once for every store: each store writes these changes in its own SQL, in the transaction that
// appends the event, and replays the log through them to rebuild.
import type { RuntimeEvent } from "../domain/events.js";
import type { Item } from "../domain/model.js";
import { jsonOrNull, type ItemParams, type ThreadRow } from "./rows.js";

/** A thread column an event sets to a value. */
export type ThreadColumn =
  "last_active_at" | "display_name" | "configuration" | "mode" | "status" | "backend_session" | "queued_inputs" | "plan";

export interface TurnInsert {
  id: string;
  thread_id: string;
  seq: number;
  status: string;
  started_at: string;
  completed_at: string | null;
  token_usage: string | null;
  error: string | null;
  input: string;
  model: string | null;
}

export type ProjectionWrite =
  /** Replaces the thread's row. */
  | { op: "insertThread"; row: ThreadRow }
  | { op: "setThread"; threadId: string; column: ThreadColumn; value: string | null }
  /** last_active_at = max(last_active_at, at). */
  | { op: "touchThread"; threadId: string; at: string }
  /** The thread's row, turns and items. */
  | { op: "deleteThread"; threadId: string }
  /** Kept if the turn exists already; not made for a thread that does not exist (deleted mid-turn). */
  | { op: "insertTurn"; row: TurnInsert }
  /** token_usage is kept when the end brings none. */
  | {
      op: "finishTurn";
      turnId: string;
      status: string;
      completedAt: string;
      tokenUsage: string | null;
      error: string | null;
      cancelReason: string | null;
    }
  | { op: "setTurn"; turnId: string; column: "diff" | "token_usage"; value: string }
  /** Not made for a thread that does not exist. `replace`: an existing row gets the new data; else it is kept. */
  | { op: "putItem"; row: ItemParams; replace: boolean }
  | { op: "insertRule"; workspacePath: string; scopeKey: string };

const itemRow = (item: Item, ord: number): ItemParams => ({
  id: item.id,
  thread_id: item.threadId,
  turn_id: item.turnId,
  ord,
  type: item.type,
  data: JSON.stringify(item),
});

export function projectEvent(e: RuntimeEvent): ProjectionWrite[] {
  const set = (column: ThreadColumn, value: string | null): ProjectionWrite[] => [{ op: "setThread", threadId: e.threadId, column, value }];
  switch (e.type) {
    case "thread.created": {
      const t = e.data.thread;
      const row: ThreadRow = {
        id: t.id,
        workspace_path: t.workspacePath,
        user_id: t.userId ?? null,
        origin_channel: t.originChannel,
        channel_context: t.channelContext ?? null,
        display_name: t.displayName ?? null,
        status: t.status,
        created_at: t.createdAt,
        last_active_at: t.lastActiveAt,
        history_mode: t.historyMode,
        mode: t.mode,
        configuration: jsonOrNull(t.configuration),
        metadata: JSON.stringify(t.metadata ?? {}),
        queued_inputs: JSON.stringify(t.queuedInputs ?? []),
        plan: jsonOrNull(t.plan),
        forked_from: jsonOrNull(t.forkedFrom),
        backend_session: jsonOrNull(t.backendSession),
      };
      return [{ op: "insertThread", row }];
    }
    case "thread.resumed":
      return set("last_active_at", e.data.lastActiveAt);
    case "thread.renamed":
      return set("display_name", e.data.displayName);
    case "thread.configured":
      return set("configuration", jsonOrNull(e.data.configuration));
    case "thread.modeChanged":
      return set("mode", e.data.mode);
    case "thread.statusChanged":
      return set("status", e.data.status);
    case "thread.backendSession":
      return set("backend_session", JSON.stringify(e.data.session));
    case "thread.queueUpdated":
      return set("queued_inputs", JSON.stringify(e.data.queuedInputs));
    case "turn.planUpdated":
      return set("plan", JSON.stringify(e.data.plan));
    case "thread.deleted":
      return [{ op: "deleteThread", threadId: e.threadId }];
    case "turn.started": {
      const t = e.data.turn;
      const row: TurnInsert = {
        id: t.id,
        thread_id: e.threadId,
        seq: e.seq,
        status: t.status,
        started_at: t.startedAt,
        completed_at: t.completedAt ?? null,
        token_usage: jsonOrNull(t.tokenUsage),
        error: jsonOrNull(t.error),
        input: JSON.stringify(t.input ?? []),
        model: t.model ?? null,
      };
      return [
        { op: "insertTurn", row },
        { op: "touchThread", threadId: e.threadId, at: e.ts },
      ];
    }
    case "turn.completed":
    case "turn.failed":
    case "turn.cancelled":
      return [
        {
          op: "finishTurn",
          turnId: e.data.turnId,
          status: e.type === "turn.completed" ? "completed" : e.type === "turn.failed" ? "failed" : "cancelled",
          completedAt: e.data.completedAt,
          tokenUsage: jsonOrNull(e.data.tokenUsage),
          error: e.type === "turn.failed" ? JSON.stringify(e.data.error) : null,
          // The reason is kept in its own column; Turn.error stays unset for a cancelled turn.
          cancelReason: e.type === "turn.cancelled" ? e.data.reason : null,
        },
      ];
    case "turn.diffUpdated":
      return [{ op: "setTurn", turnId: e.data.turnId, column: "diff", value: e.data.diff }];
    case "usage.updated":
      return [{ op: "setTurn", turnId: e.data.turnId, column: "token_usage", value: JSON.stringify(e.data.usage) }];
    case "item.started":
      return [{ op: "putItem", row: itemRow(e.data.item, e.seq), replace: false }];
    case "item.completed":
      // An item may complete without a started event; its ordinal is then this seq.
      return [{ op: "putItem", row: itemRow(e.data.item, e.seq), replace: true }];
    case "approval.ruleAdded":
      return [{ op: "insertRule", workspacePath: e.data.workspacePath, scopeKey: e.data.scopeKey }];
    case "thread.runtimeChanged":
    case "item.delta":
    case "approval.resolved":
      return []; // log only
  }
}
