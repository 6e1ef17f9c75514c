// The event that ends a turn, for every way a turn ends: run, crash recovery, fork copy.
import type { NewEvent } from "../domain/events.js";
import type { TokenUsage } from "../domain/model.js";
import type { TurnOutcome } from "../backends/backend.js";

export function turnEndEvent(
  threadId: string,
  turnId: string,
  outcome: TurnOutcome,
  completedAt: string,
  tokenUsage?: TokenUsage,
): NewEvent {
  const base = { turnId, completedAt, ...(tokenUsage ? { tokenUsage } : {}) };
  if (outcome.status === "completed") return { type: "turn.completed", threadId, data: base };
  if (outcome.status === "failed") return { type: "turn.failed", threadId, data: { ...base, error: outcome.error } };
  return { type: "turn.cancelled", threadId, data: { ...base, reason: outcome.reason } };
}
