// claude-app-server dialect: how runtime objects and events look on the wire (snake_case, Claude
// content-block vocabulary).
import type { RuntimeEvent } from "../../domain/events.js";
import type { InputPart, Item, ThreadConfiguration, Turn } from "../../domain/model.js";
import type { Content, ClaudeNotification, PermissionMode, TurnStatus, WireItem, WireTurn } from "./schemas.js";

export const SERVER_NAME = "claude-app-server";

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

/** The reverse, for any thread (also ones another dialect configured; "interrupt" reads as default). */
export function permissionMode(config: ThreadConfiguration | undefined): PermissionMode {
  if (config?.approvalPolicy === "autoApprove") return "bypassPermissions";
  if (config?.autoApproveTypes?.includes("file")) return "acceptEdits";
  return "default";
}

export function toInput(content: Content): InputPart[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content.map(({ text }) => ({ type: "text", text }));
}

export function turnStatus(status: Turn["status"]): TurnStatus {
  if (status === "waitingApproval") return "waiting_approval";
  if (status === "cancelled") return "interrupted";
  return status;
}

/**
 * One runtime item as a content block, or undefined for items this dialect does not show:
 * approvalRequest/approvalResponse (the approval/request notification and the tool_result
 * carry them), toolExecution (lifecycle only; tool_call/tool_result say the same), error (the
 * turn's error, sent as turn/error) and systemNotice (no equivalent in the Claude vocabulary).
 */
export function wireItem(item: Item): WireItem | undefined {
  const { id } = item;
  switch (item.type) {
    case "userMessage":
      return { id, type: "user", text: item.payload.text, ...(item.payload.steered ? { steered: true } : {}) };
    case "agentMessage":
      return { id, type: "text", text: item.payload.text };
    case "reasoningContent":
      return { id, type: "thinking", text: item.payload.text };
    case "toolCall":
      return { id, type: "tool_call", tool_use_id: item.payload.callId, tool_name: item.payload.toolName, input: toolInput(item.payload) };
    case "toolResult":
      return { id, type: "tool_result", tool_use_id: item.payload.callId, content: item.payload.output, is_error: !item.payload.success };
    case "fileChange":
      return { id, type: "file_change", tool_use_id: item.payload.callId, path: item.payload.path, diff: item.payload.diff };
    case "commandExecution":
      return {
        id,
        type: "command_output",
        tool_use_id: item.payload.callId,
        command: item.payload.command,
        output: item.payload.output,
        exit_code: item.payload.exitCode ?? null,
      };
    case "approvalRequest":
    case "approvalResponse":
    case "toolExecution":
    case "error":
    case "systemNotice":
      return undefined;
  }
}

/** The parsed arguments, or the raw text when the model sent invalid JSON. */
export function toolInput(call: { arguments?: unknown; argumentsText: string }): unknown {
  return call.arguments !== undefined ? call.arguments : call.argumentsText;
}

export function wireItems(items: Item[] = []): WireItem[] {
  return items.flatMap((item) => wireItem(item) ?? []);
}

export function wireTurn(turn: Turn): WireTurn {
  return {
    turn_id: turn.id,
    status: turnStatus(turn.status),
    started_at: turn.startedAt,
    ...(turn.completedAt ? { completed_at: turn.completedAt } : {}),
    ...(turn.model ? { model: turn.model } : {}),
    ...(turn.error ? { error: { code: turn.error.code, message: turn.error.message } } : {}),
    items: wireItems(turn.items),
  };
}

/** Reads a finished turn's items, to count them in turn/completed. */
export type TurnLookup = (turnId: string) => Turn | undefined;

/**
 * Maps one runtime event of a followed thread to this dialect's notifications (none, one, or
 * two: a failed turn sends turn/error and then turn/completed with status "failed", so a client
 * can always wait for turn/completed as the single end-of-turn signal).
 */
export function toNotifications(event: RuntimeEvent, lookup: TurnLookup): ClaudeNotification[] {
  const thread_id = event.threadId;
  switch (event.type) {
    case "turn.started":
      return [{ method: "turn/started", params: { thread_id, turn_id: event.data.turn.id } }];
    case "item.delta": {
      const { kind, turnId, itemId, delta } = event.data;
      // Tool-argument and command-output deltas have no place in { type: text|thinking }.
      const type = kind === "agentMessage" ? "text" : kind === "reasoning" ? "thinking" : undefined;
      if (!type) return [];
      return [{ method: "item/progress", params: { thread_id, turn_id: turnId, item_id: itemId, delta: { type, text: delta } } }];
    }
    case "item.completed": {
      const item = wireItem(event.data.item);
      return item ? [{ method: "item/created", params: { thread_id, turn_id: event.data.item.turnId, item } }] : [];
    }
    case "turn.completed":
    case "turn.cancelled":
    case "turn.failed": {
      const { turnId: turn_id, completedAt: completed_at } = event.data;
      const status = event.type === "turn.completed" ? "completed" : event.type === "turn.cancelled" ? "interrupted" : "failed";
      const completed: ClaudeNotification = {
        method: "turn/completed",
        params: { thread_id, turn_id, status, items_count: wireItems(lookup(turn_id)?.items).length, completed_at },
      };
      if (event.type !== "turn.failed") return [completed];
      const { code, message } = event.data.error;
      return [{ method: "turn/error", params: { thread_id, turn_id, error: { code, message } } }, completed];
    }
    default:
      return [];
  }
}
