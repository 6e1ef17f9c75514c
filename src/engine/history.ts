// Rebuilds the model conversation from a thread's persisted items, so a resumed thread (even
// after a restart) continues with the full context.
import type { ClientMessage, InputPart, Item } from "../runtime/model.js";
import type { ConversationMessage, ToolCallRequest } from "../providers/provider.js";

type AssistantMessage = Extract<ConversationMessage, { role: "assistant" }>;

/** Renders structured input parts as the text the model sees. */
export function inputToText(input: InputPart[]): string {
  return input
    .map((part) => {
      switch (part.type) {
        case "text":
          return part.text;
        case "commandRef":
          return `/${part.name}${part.args ? ` ${part.args}` : ""}`;
        case "skillRef":
          return `[skill: ${part.name}]`;
        case "fileRef":
          return `[file: ${part.path}]`;
        case "image":
          return `[image: ${part.url}]`;
        case "localImage":
          return `[image: ${part.path}]`;
      }
    })
    .join("\n");
}

export function historyFromItems(items: Iterable<Item>): ConversationMessage[] {
  const messages: ConversationMessage[] = [];
  let assistant: AssistantMessage | undefined;
  // Tool calls whose result never arrived (an interrupted turn) get a synthetic result, since
  // the model APIs reject a tool call without one.
  let unanswered = new Map<string, ToolCallRequest>();

  const closeAssistant = (): void => {
    for (const call of unanswered.values()) {
      messages.push({ role: "tool", toolCallId: call.id, toolName: call.name, content: "The tool call was interrupted.", isError: true });
    }
    unanswered = new Map();
    assistant = undefined;
  };
  const openAssistant = (): AssistantMessage => {
    if (!assistant) {
      assistant = { role: "assistant", content: "" };
      messages.push(assistant);
    }
    return assistant;
  };

  for (const item of items) {
    switch (item.type) {
      case "userMessage":
        closeAssistant();
        messages.push({ role: "user", content: item.payload.text });
        break;
      case "reasoningContent": {
        const target = openAssistant();
        target.reasoning = { text: (target.reasoning?.text ?? "") + item.payload.text, ...(item.payload.signature ? { signature: item.payload.signature } : {}) };
        break;
      }
      case "agentMessage":
        openAssistant().content += item.payload.text;
        break;
      case "toolCall": {
        const call = { id: item.payload.callId, name: item.payload.toolName, argumentsText: item.payload.argumentsText || "{}" };
        const target = openAssistant();
        (target.toolCalls ??= []).push(call);
        unanswered.set(call.id, call);
        break;
      }
      case "toolResult":
        if (!unanswered.delete(item.payload.callId)) break;
        messages.push({ role: "tool", toolCallId: item.payload.callId, toolName: item.payload.toolName, content: item.payload.output, isError: !item.payload.success });
        // Anything the model says after tool results belongs to its next message.
        if (unanswered.size === 0) assistant = undefined;
        break;
      default:
        break;
    }
  }
  closeAssistant();
  return messages;
}

export function historyFromClientMessages(messages: ClientMessage[]): { system?: string; messages: ConversationMessage[] } {
  const system = messages.filter((m) => m.role === "system").map((m) => m.content).join("\n\n");
  const rest: ConversationMessage[] = messages
    .filter((m) => m.role !== "system")
    .map((m) => (m.role === "user" ? { role: "user", content: m.content } : { role: "assistant", content: m.content }));
  return { ...(system ? { system } : {}), messages: rest };
}
