// The mapping from runtime events of a conversation's turn to Yeaft's `claude_output` data: the
// Claude stream-json shapes every Yeaft client renders (`assistant` with text, thinking and
// tool_use blocks; `user` with tool_result blocks; `result` at the end), whichever backend ran it.
import type { RuntimeEvent } from "../../domain/events.js";
import type { TokenUsage } from "../../domain/model.js";
import type { BackendSpec } from "../../domain/model.js";

type Data = Record<string, unknown>;

const assistant = (content: Data[]): Data => ({ type: "assistant", message: { role: "assistant", content } });
const user = (content: Data[]): Data => ({ type: "user", message: { role: "user", content } });

/** claude_output data for one runtime event of the turn (none for most). */
export function outputOf(event: RuntimeEvent): Data[] {
  switch (event.type) {
    case "item.delta":
      if (event.data.kind === "agentMessage") return [assistant([{ type: "text", text: event.data.delta }])];
      if (event.data.kind === "reasoning") return [assistant([{ type: "thinking", thinking: event.data.delta }])];
      return [];
    case "item.completed": {
      const item = event.data.item;
      if (item.type === "toolCall") {
        return [
          assistant([
            {
              type: "tool_use",
              id: item.payload.callId,
              name: item.payload.toolName,
              input: item.payload.arguments ?? item.payload.argumentsText,
            },
          ]),
        ];
      }
      if (item.type === "toolResult") {
        return [
          user([{ type: "tool_result", tool_use_id: item.payload.callId, content: item.payload.output, is_error: !item.payload.success }]),
        ];
      }
      if (item.type === "commandExecution") {
        return [
          user([
            {
              type: "tool_result",
              tool_use_id: item.payload.callId,
              content: item.payload.output,
              is_error: (item.payload.exitCode ?? 0) !== 0,
            },
          ]),
        ];
      }
      if (item.type === "fileChange") {
        return [user([{ type: "tool_result", tool_use_id: item.payload.callId, content: item.payload.diff }])];
      }
      if (item.type === "error") return [{ type: "system", subtype: "error", message: item.payload.message, code: item.payload.code }];
      return [];
    }
    default:
      return [];
  }
}

/** The `result` that ends a turn. */
export function resultOf(
  end: { status: "completed" | "cancelled" | "failed"; error?: { code: string; message: string } },
  threadId: string,
  durationMs: number,
  usage: TokenUsage | undefined,
): Data {
  return {
    type: "result",
    subtype: end.status === "completed" ? "success" : "error_during_execution",
    session_id: threadId,
    is_error: end.status !== "completed",
    duration_ms: Math.round(durationMs),
    total_cost_usd: usage?.costUsd ?? 0,
    usage: {
      input_tokens: usage?.inputTokens ?? 0,
      output_tokens: usage?.outputTokens ?? 0,
      cache_read_input_tokens: usage?.cachedInputTokens ?? 0,
    },
    ...(end.status === "cancelled" ? { cancelled: true } : {}),
    ...(end.error ? { error: end.error } : {}),
  };
}

/** The backend of a conversation's `provider` (create_conversation): switchyard is the built-in engine. */
export function backendOf(provider: string | undefined, options: Record<string, unknown> = {}): BackendSpec | undefined {
  switch (provider ?? "switchyard") {
    case "switchyard":
      return { type: "builtin" };
    case "claude-code":
      return { type: "claude-code" };
    case "codex":
      return { type: "codex" };
    case "copilot":
      return { type: "acp", command: "copilot", args: ["--acp"] };
    case "acp": {
      const command = options.command;
      if (typeof command === "string" && command.trim()) {
        const [bin, ...args] = command.trim().split(/\s+/) as [string, ...string[]];
        return { type: "acp", command: bin, args: [...args, ...(Array.isArray(options.args) ? options.args.map(String) : [])] };
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
