// The mapping between runtime events of a session's thread and AgentCompany run events: what
// the agent said and did becomes `provider.raw` and `provider.item`, usage `usage.reported`,
// and the turn's end `run.ended`, `run.failed` or `run.stopped`.
import type { RuntimeEvent } from "../../domain/events.js";
import type { BackendSpec } from "../../domain/model.js";
import type { NewRunEvent } from "./run-log.js";

/** Adapters of the protocol and the backend each runs on ("switchyard" is the built-in engine). */
export const ADAPTERS: Record<string, { provider: string; backend?: BackendSpec; mode: "protocol" | "cli" }> = {
  switchyard: { provider: "switchyard", backend: { type: "builtin" }, mode: "protocol" },
  codex_app_server: { provider: "codex", backend: { type: "codex" }, mode: "protocol" },
  codex_cli: { provider: "codex", backend: { type: "codex" }, mode: "cli" },
  claude_cli: { provider: "claude", backend: { type: "claude-code" }, mode: "cli" },
  // Switchyard has no Gemini backend yet: listed, and unavailable.
  gemini_cli: { provider: "gemini", mode: "cli" },
};

/** The run's end, as its last event. */
export type RunEnd = { status: "ended" | "failed" | "stopped"; event: NewRunEvent };

/** The run events of one runtime event of the session's turn; `end` when the turn ended. */
export function runEventsOf(event: RuntimeEvent): { events: NewRunEvent[]; end?: RunEnd } {
  switch (event.type) {
    case "item.completed": {
      const item = event.data.item;
      if (item.type === "userMessage") return { events: [] };
      if (item.type === "agentMessage") {
        return { events: [{ type: "provider.raw", payload: { stream: "stdout", chunk: item.payload.text, item_id: item.id } }] };
      }
      return { events: [{ type: "provider.item", payload: { item_type: item.type, item_id: item.id, payload: item.payload } }] };
    }
    case "usage.updated": {
      const u = event.data.usage;
      return {
        events: [
          {
            type: "usage.reported",
            payload: {
              source: "provider_reported",
              input_tokens: u.inputTokens,
              cached_input_tokens: u.cachedInputTokens ?? 0,
              output_tokens: u.outputTokens,
              total_tokens: u.totalTokens,
              ...(u.costUsd !== undefined ? { cost_usd: u.costUsd } : {}),
            },
          },
        ],
      };
    }
    case "turn.completed":
      return end("ended", "run.ended", { exit_code: 0, signal: null, stopped: false });
    case "turn.cancelled":
      return end("stopped", "run.stopped", { exit_code: null, signal: null, stopped: true, reason: event.data.reason });
    case "turn.failed":
      return end("failed", "run.failed", { exit_code: null, signal: null, stopped: false, error: event.data.error });
    default:
      return { events: [] };
  }
}

function end(status: RunEnd["status"], type: string, payload: Record<string, unknown>): { events: NewRunEvent[]; end: RunEnd } {
  return { events: [], end: { status, event: { type, payload } } };
}
