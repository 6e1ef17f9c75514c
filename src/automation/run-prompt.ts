// A prompt run as a turn on a thread by the server itself (a cron job, the heartbeat): started
// when the thread is idle (after the running turn, if there is one), then followed to its end.
import { RuntimeError } from "../domain/errors.js";
import type { RuntimeEvent } from "../domain/events.js";
import type { RuntimeApi } from "../runtime/api.js";

export interface PromptOutcome {
  turnId: string;
  status: "ok" | "error";
  /** The agent's last message, if it wrote one. */
  text: string | null;
  error: string | null;
}

type Runtime = Pick<RuntimeApi, "subscribe" | "startTurn">;

/** The outcome of a prompt that could not be run at all (its thread archived, deleted...). */
export function failedOutcome(error: unknown): PromptOutcome {
  return { turnId: "", status: "error", text: null, error: error instanceof Error ? error.message : String(error) };
}

/**
 * The thread the server keeps for a channel of a workspace (and a chat of it): the one made
 * first, else a new one.
 */
export async function channelThread(
  runtime: Pick<RuntimeApi, "listThreads" | "startThread">,
  params: { workspacePath: string; originChannel: string; channelContext?: string; userId?: string; displayName: string },
): Promise<string> {
  const { workspacePath, originChannel, channelContext } = params;
  const [existing] = (
    await runtime.listThreads(
      { originChannel, workspacePath, ...(channelContext !== undefined ? { channelContext } : {}), hideArchived: true },
      { limit: 1 },
    )
  ).threads;
  return existing?.id ?? runtime.startThread(params).id;
}

export async function runPrompt(runtime: Runtime, threadId: string, prompt: string): Promise<PromptOutcome> {
  for (;;) {
    const ends = watchTurnEnds(runtime, threadId);
    try {
      const turn = await runtime.startTurn(threadId, { input: [{ type: "text", text: prompt }] });
      return await ends.of(turn.id);
    } catch (error) {
      if (!(error instanceof RuntimeError && error.code === "turnInProgress")) throw error;
      await ends.next();
    } finally {
      ends.stop();
    }
  }
}

/** Follows a thread's turn endings from now on (events come after the call that caused them). */
function watchTurnEnds(runtime: Runtime, threadId: string) {
  const texts = new Map<string, string>();
  const ended = new Map<string, PromptOutcome>();
  const waiters: Array<() => void> = [];
  const stop = runtime.subscribe((event: RuntimeEvent) => {
    if (event.threadId !== threadId) return;
    if (event.type === "item.completed" && event.data.item.type === "agentMessage")
      texts.set(event.data.item.turnId, (event.data.item.payload as { text: string }).text);
    if (event.type !== "turn.completed" && event.type !== "turn.failed" && event.type !== "turn.cancelled") return;
    const { turnId } = event.data;
    ended.set(turnId, {
      turnId,
      status: event.type === "turn.completed" ? "ok" : "error",
      text: texts.get(turnId) ?? null,
      error:
        event.type === "turn.failed"
          ? event.data.error.message
          : event.type === "turn.cancelled"
            ? `cancelled: ${event.data.reason}`
            : null,
    });
    for (const wake of waiters.splice(0)) wake();
  });
  const until = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => (done() ? resolve() : void waiters.push(check));
      check();
    });
  return {
    stop,
    /** When the turn `turnId` has ended, how. */
    of: async (turnId: string): Promise<PromptOutcome> => {
      await until(() => ended.has(turnId));
      return ended.get(turnId)!;
    },
    /** When any turn of the thread has ended. */
    next: (): Promise<void> => until(() => ended.size > 0),
  };
}
