// The mapping between runtime turns and AgentCraft prompt results: one prompt runs as a turn of
// a runtime thread; its agent messages become the answer and its failure an AgentCraft error.
import type { RuntimeEvent } from "../../domain/events.js";
import { RuntimeError } from "../../domain/errors.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { watchTurn } from "../turn-watch.js";
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
  let watched;
  try {
    watched = await watchTurn(
      runtime,
      threadId,
      { input: [{ type: "text", text }], ...(opts.model ? { model: opts.model } : {}) },
      (event) => {
        opts.onEvent?.(event);
        if (event.type === "item.completed" && event.data.item.type === "agentMessage")
          messages.set(event.data.item.id, event.data.item.payload.text);
      },
    );
  } catch (error) {
    if (error instanceof RuntimeError && error.code === "turnInProgress") {
      throw new AgentCraftError("GENERIC_BUSINESS", "The agent is busy with another prompt on this session; try again when it ends.", {
        threadId,
      });
    }
    throw error;
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
  const end = await Promise.race([watched.ended, timedOut]);
  clearTimeout(timer);
  if (end === "timeout") {
    void runtime.interrupt(threadId).catch(() => undefined);
    throw new AgentCraftError("GENERIC_BUSINESS", `The agent did not finish within ${timeoutMs} ms; its turn was interrupted.`, {
      threadId,
    });
  }
  if (end.type === "turn.failed") {
    const { code, message } = end.data.error;
    const launch = code.startsWith("backend");
    throw new AgentCraftError(launch ? "AGENT_LAUNCH" : "GENERIC_BUSINESS", `The agent's turn failed (${code}): ${message}`, {
      code,
      threadId,
    });
  }
  return { text: [...messages.values()].join("\n\n"), status: end.type === "turn.completed" ? "completed" : "cancelled" };
}
