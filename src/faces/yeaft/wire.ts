// The mapping from runtime events of a conversation's turn to Yeaft's `claude_output` data: the
// Claude stream-json shapes every Yeaft client renders (`assistant` with text, thinking and
// tool_use blocks; `user` with tool_result blocks; `result` at the end), whichever backend ran it.
import type { RuntimeEvent } from "../../domain/events.js";
import type { BackendSpec, InputPart, TokenUsage } from "../../domain/model.js";

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
      if (item.type === "pluginFunctionCall" || item.type === "dynamicToolCall") {
        // The call and its result in one item: a tool_use, then its tool_result.
        const { callId, toolName, arguments: input, argumentsText, output, success } = item.payload;
        return [
          assistant([{ type: "tool_use", id: callId, name: toolName, input: input ?? argumentsText }]),
          ...(output === undefined ? [] : [user([{ type: "tool_result", tool_use_id: callId, content: output, is_error: !success }])]),
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

/**
 * What a browser catching up is sent, event by event, in order: the turns' output as it was
 * streamed, the user's messages (live, the browser that sent one shows it already; attachments
 * by name) and each turn's closing `result`. One per conversation replay: it remembers when each
 * turn started.
 */
export function historyReplay(threadId: string): (event: RuntimeEvent) => Data[] {
  const started = new Map<string, number>();
  return (event) => {
    switch (event.type) {
      case "turn.started":
        started.set(event.data.turn.id, Date.parse(event.data.turn.startedAt));
        return [];
      case "turn.completed":
      case "turn.failed":
      case "turn.cancelled": {
        const duration = Date.parse(event.data.completedAt) - (started.get(event.data.turnId) ?? Date.parse(event.data.completedAt));
        const status = event.type === "turn.completed" ? "completed" : event.type === "turn.failed" ? "failed" : "cancelled";
        const error = event.type === "turn.failed" ? { error: event.data.error } : {};
        return [resultOf({ status, ...error }, threadId, duration, event.data.tokenUsage)];
      }
      case "item.completed":
        if (event.data.item.type === "userMessage") return [userMessage(event.data.item.payload.input)];
        return outputOf(event);
      default:
        return outputOf(event);
    }
  };
}

/** The user's own text, and their attachments by name (inputOf's parts, read back). */
function userMessage(input: InputPart[]): Data {
  const [first, ...rest] = input;
  const attachments = rest.map((part) =>
    part.type === "text" ? (/^Attached file (.+?):\n/.exec(part.text)?.[1] ?? "text") : part.type === "image" ? "image" : part.type,
  );
  return {
    ...user([{ type: "text", text: first?.type === "text" ? first.text : "" }]),
    ...(attachments.length ? { attachments } : {}),
  };
}

/** An attachment as browsers send it (`send_message`, `yeaft_session_chat`). */
export interface Attachment {
  name: string;
  mime: string;
  base64: string;
}

const MAX_ATTACHMENT_BYTES = 8 * 1024 * 1024;
const MAX_TEXT_ATTACHMENT_CHARS = 256 * 1024;
const TEXT_MIME = /^(text\/|application\/(json|xml|javascript|x-yaml|yaml|toml|x-sh|sql))/;

/**
 * A message's text and attachments as turn input: images as image parts (for models that take
 * them), text files inline, anything else refused with a reason.
 */
export function inputOf(text: string, attachments: unknown): InputPart[] | { problem: string } {
  const parts: InputPart[] = text ? [{ type: "text", text }] : [];
  for (const raw of Array.isArray(attachments) ? attachments : []) {
    const a = raw as Partial<Attachment>;
    if (typeof a.name !== "string" || typeof a.base64 !== "string") return { problem: "An attachment needs a name and base64 content." };
    const mime = typeof a.mime === "string" ? a.mime : "application/octet-stream";
    const bytes = Buffer.from(a.base64, "base64");
    if (bytes.length > MAX_ATTACHMENT_BYTES) return { problem: `${a.name} is larger than ${MAX_ATTACHMENT_BYTES / 1024 / 1024} MB.` };
    if (mime.startsWith("image/")) {
      parts.push({ type: "image", url: `data:${mime};base64,${a.base64}` });
      continue;
    }
    const content = bytes.toString("utf8");
    if (!TEXT_MIME.test(mime) && (content.includes("\u0000") || content.includes("\uFFFD"))) {
      return { problem: `${a.name} (${mime}) is binary: attach images or text files.` };
    }
    if (content.length > MAX_TEXT_ATTACHMENT_CHARS) return { problem: `${a.name} is longer than ${MAX_TEXT_ATTACHMENT_CHARS} characters.` };
    parts.push({ type: "text", text: `Attached file ${a.name}:\n\`\`\`\n${content}\n\`\`\`` });
  }
  return parts.length > 0 ? parts : { problem: "The message is empty." };
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
