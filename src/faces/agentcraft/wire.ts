// The mapping between runtime turns and AgentCraft prompt results: one prompt runs as a turn of
// a runtime thread; its agent messages become the answer and its failure an AgentCraft error.
import type { RuntimeEvent } from "../../domain/events.js";
import { RuntimeError } from "../../domain/errors.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { AgentCraftError } from "./errors.js";

export interface TurnResult {
  text: string;
  status: "completed" | "cancelled";
}

export const DEFAULT_RUN_TIMEOUT_MS = 300_000;

export async function promptThread(
  runtime: RuntimeApi,
  threadId: string,
  text: string,
  opts: { timeoutMs?: number; model?: string; onEvent?: (event: RuntimeEvent) => void } = {},
): Promise<TurnResult> {
  const messages = new Map<string, string>();
  let turnId: string | undefined;
  let settle!: (result: TurnResult | Error) => void;
  const ended = new Promise<TurnResult | Error>((resolve) => (settle = resolve));
  const early: RuntimeEvent[] = [];
  const handle = (event: RuntimeEvent): void => {
    if (event.threadId !== threadId) return;
    const ofTurn =
      ("turnId" in event.data && event.data.turnId === turnId) ||
      ("item" in event.data && event.data.item.turnId === turnId) ||
      ("turn" in event.data && event.data.turn.id === turnId);
    if (!ofTurn) return;
    opts.onEvent?.(event);
    if (event.type === "item.completed" && event.data.item.type === "agentMessage") {
      messages.set(event.data.item.id, event.data.item.payload.text);
    } else if (event.type === "turn.completed") {
      settle({ text: [...messages.values()].join("\n\n"), status: "completed" });
    } else if (event.type === "turn.cancelled") {
      settle({ text: [...messages.values()].join("\n\n"), status: "cancelled" });
    } else if (event.type === "turn.failed") {
      const { code, message } = event.data.error;
      const launch = code.startsWith("backend");
      settle(
        new AgentCraftError(launch ? "AGENT_LAUNCH" : "GENERIC_BUSINESS", `The agent's turn failed (${code}): ${message}`, {
          code,
          threadId,
        }),
      );
    }
  };
  // Subscribed before the turn starts; events that come before its id is known wait in `early`.
  const unsubscribe = runtime.subscribe((event) => (turnId === undefined ? early.push(event) : handle(event)));
  try {
    try {
      turnId = runtime.startTurn(threadId, { input: [{ type: "text", text }], ...(opts.model ? { model: opts.model } : {}) }).id;
    } catch (error) {
      if (error instanceof RuntimeError && error.code === "turnInProgress") {
        throw new AgentCraftError("GENERIC_BUSINESS", "The agent is busy with another prompt on this session; try again when it ends.", {
          threadId,
        });
      }
      throw error;
    }
    for (const event of early.splice(0)) handle(event);
    const timeoutMs = opts.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
    const timer = setTimeout(() => {
      void runtime.interrupt(threadId).catch(() => undefined);
      settle(
        new AgentCraftError("GENERIC_BUSINESS", `The agent did not finish within ${timeoutMs} ms; its turn was interrupted.`, { threadId }),
      );
    }, timeoutMs);
    const result = await ended;
    clearTimeout(timer);
    if (result instanceof Error) throw result;
    return result;
  } finally {
    unsubscribe();
  }
}
