// Rebuilds the model conversation from a thread's persisted items, so a resumed thread (even
// after a restart) continues with the full context.
import type { ClientMessage, InputPart, Item, ItemOf } from "../../domain/model.js";
import type { ConversationMessage, ToolCallRequest } from "../../providers/provider.js";
import { summaryMessage } from "./compaction.js";

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

export interface RebuiltHistory {
  messages: ConversationMessage[];
  /** The last item each message was built from; compaction records it as what a summary covers. */
  itemIds: Map<ConversationMessage, string>;
}

/**
 * The conversation the items describe. When the thread was compacted, it starts from the
 * latest compaction notice: its summary as a user message, the request that turn was working
 * on when it was covered too, then the items after the last one the summary covers.
 */
export function rebuildHistory(
  items: Iterable<Item>,
  toUser: (item: ItemOf<"userMessage">) => ConversationMessage = textOnly,
): RebuiltHistory {
  const all = [...items];
  const messages: ConversationMessage[] = [];
  const itemIds = new Map<ConversationMessage, string>();
  const add = (message: ConversationMessage, itemId: string): void => {
    messages.push(message);
    itemIds.set(message, itemId);
  };
  let assistant: AssistantMessage | undefined;
  // Tool calls whose result never arrived (an interrupted turn) get a synthetic result, since
  // the model APIs reject a tool call without one.
  // A plugin function's item carries its result too: it is given once the calls are all in.
  let unanswered = new Map<string, ToolCallRequest & { itemId: string; result?: { output: string; success: boolean } }>();

  /** The results known from the call items (plugin functions), after the assistant's calls. */
  const answerKnown = (): void => {
    for (const [callId, call] of unanswered) {
      if (!call.result) continue;
      unanswered.delete(callId);
      add(
        { role: "tool", toolCallId: callId, toolName: call.name, content: call.result.output, isError: !call.result.success },
        call.itemId,
      );
    }
  };
  const closeAssistant = (): void => {
    answerKnown();
    for (const call of unanswered.values()) {
      add(
        { role: "tool", toolCallId: call.id, toolName: call.name, content: "The tool call was interrupted.", isError: true },
        call.itemId,
      );
    }
    unanswered = new Map();
    assistant = undefined;
  };
  const openAssistant = (itemId: string): AssistantMessage => {
    if (!assistant) {
      assistant = { role: "assistant", content: "" };
      messages.push(assistant);
    }
    itemIds.set(assistant, itemId);
    return assistant;
  };

  const compaction = latestCompaction(all);
  if (compaction) {
    add(summaryMessage(compaction.summary), compaction.noticeId);
    if (compaction.keptUser) add(toUser(compaction.keptUser), compaction.keptUser.id);
  }
  for (const item of all.slice(compaction?.resumeAt ?? 0)) {
    switch (item.type) {
      case "userMessage":
        closeAssistant();
        add(toUser(item), item.id);
        break;
      case "reasoningContent": {
        const target = openAssistant(item.id);
        target.reasoning = {
          text: (target.reasoning?.text ?? "") + item.payload.text,
          ...(item.payload.signature ? { signature: item.payload.signature } : {}),
        };
        break;
      }
      case "agentMessage":
        // Text after answered plugin calls is the model's next message.
        if (unanswered.size > 0 && [...unanswered.values()].every((c) => c.result)) closeAssistant();
        openAssistant(item.id).content += item.payload.text;
        break;
      case "dynamicToolCall":
      case "pluginFunctionCall": {
        const { callId, toolName, argumentsText, output, success } = item.payload;
        const call = { id: callId, name: toolName, argumentsText: argumentsText || "{}" };
        (openAssistant(item.id).toolCalls ??= []).push(call);
        unanswered.set(callId, {
          ...call,
          itemId: item.id,
          ...(output !== undefined ? { result: { output, success: success ?? false } } : {}),
        });
        break;
      }
      case "toolCall": {
        const call = { id: item.payload.callId, name: item.payload.toolName, argumentsText: item.payload.argumentsText || "{}" };
        const target = openAssistant(item.id);
        (target.toolCalls ??= []).push(call);
        unanswered.set(call.id, { ...call, itemId: item.id });
        break;
      }
      case "toolResult":
        answerKnown();
        // Also drops results whose call a compaction summarized (the call is not in `unanswered`).
        if (!unanswered.delete(item.payload.callId)) break;
        add(
          {
            role: "tool",
            toolCallId: item.payload.callId,
            toolName: item.payload.toolName,
            content: item.payload.output,
            isError: !item.payload.success,
          },
          item.id,
        );
        // Anything the model says after tool results belongs to its next message.
        if (unanswered.size === 0) assistant = undefined;
        break;
      default:
        break;
    }
  }
  closeAssistant();
  return { messages, itemIds };
}

/** A user message as the text it was recorded with (attachments not read again). */
function textOnly(item: ItemOf<"userMessage">): ConversationMessage {
  return { role: "user", content: item.payload.text };
}

/**
 * The latest compaction notice whose covered items are present. Should one be missing anyway
 * (forks remap the ids, so this is defensive), the notice is skipped: the fuller history is
 * still correct, and the next turn compacts again if it has to.
 */
function latestCompaction(
  items: Item[],
): { summary: string; noticeId: string; resumeAt: number; keptUser?: ItemOf<"userMessage"> } | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const notice = items[i]!;
    if (notice.type !== "systemNotice" || notice.payload.summary === undefined || !notice.payload.coversThroughItemId) continue;
    const through = items.findIndex((item) => item.id === notice.payload.coversThroughItemId);
    if (through < 0) continue;
    // The kept request lies inside the covered range (otherwise it is replayed in order anyway).
    const kept = notice.payload.keptUserItemId
      ? items.slice(0, through + 1).find((item) => item.id === notice.payload.keptUserItemId)
      : undefined;
    return {
      summary: notice.payload.summary,
      noticeId: notice.id,
      resumeAt: through + 1,
      ...(kept?.type === "userMessage" ? { keptUser: kept } : {}),
    };
  }
  return undefined;
}

export function historyFromClientMessages(messages: ClientMessage[]): { system?: string; messages: ConversationMessage[] } {
  const system = messages
    .filter((m) => m.role === "system")
    .map((m) => m.content)
    .join("\n\n");
  const rest: ConversationMessage[] = messages
    .filter((m) => m.role !== "system")
    .map((m) => (m.role === "user" ? { role: "user", content: m.content } : { role: "assistant", content: m.content }));
  return { ...(system ? { system } : {}), messages: rest };
}
