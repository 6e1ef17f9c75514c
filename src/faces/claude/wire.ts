// claude-app-server protocol: how runtime objects and events look on the wire (snake_case, Claude
// content-block vocabulary).
import type { RuntimeEvent } from "../../domain/events.js";
import type { InputPart, Item, ThreadConfiguration, Turn } from "../../domain/model.js";
import type { Content, ClaudeNotification, ItemContent, PermissionMode, StoredItem, TurnStatus, WireTurn } from "./protocol.js";

/** How a permission mode is stored: as the thread's approval configuration. */
export function permissionConfiguration(mode: PermissionMode): ThreadConfiguration {
  switch (mode) {
    case "default":
      return { approvalPolicy: "default" };
    case "acceptEdits":
      return { approvalPolicy: "default", autoApproveTypes: ["file"] };
    case "bypassPermissions":
      return { approvalPolicy: "autoApprove" };
  }
}

/** The reverse, for any thread (also ones another face configured; "interrupt" reads as default). */
export function permissionMode(config: ThreadConfiguration | undefined): PermissionMode {
  if (config?.approvalPolicy === "autoApprove") return "bypassPermissions";
  if (config?.autoApproveTypes?.includes("file")) return "acceptEdits";
  return "default";
}

/** Epoch milliseconds of a stored ISO timestamp (the original's timestamps are all numbers). */
export function millis(iso: string): number {
  return Date.parse(iso);
}

/** A prompt as runtime input: text blocks as text, image blocks as an image (base64 as a data: URL). */
export function toInput(content: Content): InputPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((block): InputPart => {
    if (block.type === "text") return { type: "text", text: block.text };
    const { source } = block;
    return { type: "image", url: source.type === "base64" ? `data:${source.media_type};base64,${source.data}` : source.url };
  });
}

/** The text of a turn's input (the original's user_content is a string). */
export function inputText(input: InputPart[]): string {
  return input.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
}

export function turnStatus(status: Turn["status"]): TurnStatus {
  switch (status) {
    case "running":
    case "waitingApproval":
      return "active";
    case "cancelled":
      return "interrupted";
    case "failed":
      return "error";
    case "completed":
      return "completed";
  }
}

/**
 * One runtime item's content in the original's Item vocabulary, or undefined for items this
 * face does not show: userMessage (the prompt is the turn's user_content, not an item),
 * approvalRequest/approvalResponse (the approval/request notification and the tool_result
 * carry them), toolExecution (lifecycle only; tool_call/tool_result say the same), error (the
 * turn's error, sent as turn/error) and systemNotice (no equivalent in the Claude vocabulary).
 */
export function itemContent(item: Item): ItemContent | undefined {
  switch (item.type) {
    case "agentMessage":
      return { type: "text", text: item.payload.text };
    case "reasoningContent":
      return { type: "thinking", thinking: item.payload.text };
    case "toolCall":
      return { type: "tool_call", tool_use_id: item.payload.callId, name: item.payload.toolName, input: toolInput(item.payload) };
    case "toolResult":
      return { type: "tool_result", tool_use_id: item.payload.callId, content: item.payload.output, is_error: !item.payload.success };
    case "fileChange":
      return {
        type: "file_change",
        path: item.payload.path,
        operation: item.payload.kind === "add" ? "create" : "update",
        tool_use_id: item.payload.callId,
        diff: item.payload.diff,
      };
    case "commandExecution":
      return {
        type: "command_output",
        command: item.payload.command,
        stdout: item.payload.output,
        stderr: "",
        exit_code: item.payload.exitCode ?? -1,
        tool_use_id: item.payload.callId,
      };
    case "userMessage":
    case "approvalRequest":
    case "approvalResponse":
    case "toolExecution":
    case "error":
    case "systemNotice":
      return undefined;
  }
}

/** A finalized item as the original sends it: `{id, created_at, item: {type, ...}}`. */
export function storedItem(item: Item): StoredItem | undefined {
  const content = itemContent(item);
  // created_at: when the item was finalized, as the original stamps it.
  return content && { id: item.id, created_at: millis(item.completedAt ?? item.createdAt), item: content };
}

/** The parsed arguments, or the raw text when the model sent invalid JSON. */
export function toolInput(call: { arguments?: unknown; argumentsText: string }): unknown {
  return call.arguments !== undefined ? call.arguments : call.argumentsText;
}

export function storedItems(items: Item[] = []): StoredItem[] {
  return items.flatMap((item) => storedItem(item) ?? []);
}

export function wireTurn(turn: Turn): WireTurn {
  const steered = (turn.items ?? []).flatMap((i) => (i.type === "userMessage" && i.payload.steered ? [i.payload.text] : []));
  return {
    id: turn.id,
    thread_id: turn.threadId,
    status: turnStatus(turn.status),
    user_content: inputText(turn.input),
    items: storedItems(turn.items),
    created_at: millis(turn.startedAt),
    ...(turn.completedAt ? { completed_at: millis(turn.completedAt) } : {}),
    ...(turn.error ? { error: turn.error.message, error_code: turn.error.code } : {}),
    ...(steered.length > 0 ? { steered_content: steered } : {}),
    ...(turn.model ? { model: turn.model } : {}),
  };
}

/** Reads a finished turn's items, to count them in turn/completed. */
export type TurnLookup = (turnId: string) => Promise<Turn | undefined>;

/**
 * Maps one runtime event of a followed thread to this face's notifications (none, one, or
 * two: a failed turn sends turn/error and then turn/completed with status "error", so a client
 * can always wait for turn/completed as the single end-of-turn signal).
 */
export function toNotifications(event: RuntimeEvent, lookup: TurnLookup): ClaudeNotification[] | Promise<ClaudeNotification[]> {
  const thread_id = event.threadId;
  switch (event.type) {
    case "turn.started":
      return [{ method: "turn/started", params: { thread_id, turn_id: event.data.turn.id } }];
    case "item.delta": {
      const { kind, turnId, itemId, delta } = event.data;
      // Tool-argument and command-output deltas have no place in { type: text|thinking }.
      const wire =
        kind === "agentMessage"
          ? { type: "text" as const, text: delta }
          : kind === "reasoning"
            ? { type: "thinking" as const, thinking: delta }
            : undefined;
      if (!wire) return [];
      return [{ method: "item/progress", params: { thread_id, turn_id: turnId, item_id: itemId, delta: wire } }];
    }
    case "item.completed": {
      const item = storedItem(event.data.item);
      return item ? [{ method: "item/created", params: { thread_id, turn_id: event.data.item.turnId, item } }] : [];
    }
    case "turn.completed":
    case "turn.cancelled":
    case "turn.failed":
      return turnEnd(event, lookup);
    default:
      return [];
  }
}

async function turnEnd(
  event: Extract<RuntimeEvent, { type: "turn.completed" | "turn.cancelled" | "turn.failed" }>,
  lookup: TurnLookup,
): Promise<ClaudeNotification[]> {
  const { turnId: turn_id } = event.data;
  const thread_id = event.threadId;
  const completed_at = millis(event.data.completedAt);
  const status = event.type === "turn.completed" ? "completed" : event.type === "turn.cancelled" ? "interrupted" : "error";
  const items_count = storedItems((await lookup(turn_id))?.items).length;
  const completed: ClaudeNotification = { method: "turn/completed", params: { thread_id, turn_id, status, items_count, completed_at } };
  if (event.type !== "turn.failed") return [completed];
  const { code, message } = event.data.error;
  return [{ method: "turn/error", params: { thread_id, turn_id, error: message, error_code: code } }, completed];
}
