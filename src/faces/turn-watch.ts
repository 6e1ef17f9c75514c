// Runs a turn and follows it: every event of that turn, in order, then its end. Shared by the
// faces that answer a prompt with the turn's outcome (AgentCraft, AgentCompany, Yeaft).
// Listeners get events on a later tick than the call that caused them (EventDelivery), so the
// turn's id is always known before its first event arrives.
import type { RuntimeEvent } from "../domain/events.js";
import type { Turn } from "../domain/model.js";
import type { RuntimeApi, StartTurnParams } from "../runtime/api.js";

export type TurnEndEvent = Extract<RuntimeEvent, { type: "turn.completed" | "turn.failed" | "turn.cancelled" }>;

function isEnd(event: RuntimeEvent): event is TurnEndEvent {
  return event.type === "turn.completed" || event.type === "turn.failed" || event.type === "turn.cancelled";
}

function turnIdOf(event: RuntimeEvent): string | undefined {
  if ("turnId" in event.data) return event.data.turnId;
  if ("item" in event.data) return event.data.item.turnId;
  if ("turn" in event.data) return event.data.turn.id;
  return undefined;
}

/**
 * Starts the turn (throwing what startTurn throws) and hands each of its events to `onEvent`,
 * the end event included; `ended` resolves with the end event.
 */
export async function watchTurn(
  runtime: RuntimeApi,
  threadId: string,
  params: StartTurnParams,
  onEvent: (event: RuntimeEvent) => void = () => undefined,
): Promise<{ turn: Turn; ended: Promise<TurnEndEvent> }> {
  let turnId: string | undefined;
  let resolveEnd!: (end: TurnEndEvent) => void;
  const ended = new Promise<TurnEndEvent>((resolve) => (resolveEnd = resolve));
  const unsubscribe = runtime.subscribe((event) => {
    if (event.threadId !== threadId || turnId === undefined || turnIdOf(event) !== turnId) return;
    onEvent(event);
    if (isEnd(event)) {
      unsubscribe();
      resolveEnd(event);
    }
  });
  try {
    const turn = await runtime.startTurn(threadId, params);
    turnId = turn.id;
    return { turn, ended };
  } catch (error) {
    unsubscribe();
    throw error;
  }
}
