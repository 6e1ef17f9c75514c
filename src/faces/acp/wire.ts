// ACP face: pure mapping between runtime objects/events and ACP types (the SDK's own schema
// types). No I/O here; the session decides what to send and when.
import path from "node:path";
import { parsePatch } from "diff";
import type * as acp from "@agentclientprotocol/sdk";
import type { RuntimeEvent } from "../../domain/events.js";
import type {
  ApprovalDecision,
  InputPart,
  Item,
  Plan,
  Thread,
  ThreadConfiguration,
  TokenUsage,
  TurnError,
  AgentMode,
} from "../../domain/model.js";

// ---- modes -------------------------------------------------------------------------------

export type ModeId = "default" | "acceptEdits" | "bypassPermissions" | "plan";

export const MODES: acp.SessionMode[] = [
  { id: "default", name: "Ask", description: "Ask before running commands and before changing files." },
  { id: "acceptEdits", name: "Accept edits", description: "Change files without asking; ask before running commands." },
  { id: "bypassPermissions", name: "Bypass permissions", description: "Never ask: run commands and change files freely." },
  { id: "plan", name: "Plan", description: "Read-only tools and planning; no commands, no file changes." },
];

export function isModeId(id: string): id is ModeId {
  return MODES.some((m) => m.id === id);
}

/** What a mode means for the thread: its approval configuration and agent mode. */
export function modeSettings(id: ModeId): { configuration: ThreadConfiguration; mode: AgentMode } {
  switch (id) {
    case "default":
      return { configuration: { approvalPolicy: "default", autoApproveTypes: [] }, mode: "agent" };
    case "acceptEdits":
      return { configuration: { approvalPolicy: "default", autoApproveTypes: ["file"] }, mode: "agent" };
    case "bypassPermissions":
      return { configuration: { approvalPolicy: "autoApprove", autoApproveTypes: [] }, mode: "agent" };
    case "plan":
      return { configuration: { approvalPolicy: "default", autoApproveTypes: [] }, mode: "plan" };
  }
}

/** The mode a thread is in, for any thread (also ones another face configured). */
export function modeIdOf(thread: Pick<Thread, "mode" | "configuration">): ModeId {
  if (thread.mode === "plan") return "plan";
  if (thread.configuration?.approvalPolicy === "autoApprove") return "bypassPermissions";
  if (thread.configuration?.autoApproveTypes?.includes("file")) return "acceptEdits";
  return "default";
}

export function modeState(thread: Pick<Thread, "mode" | "configuration">): acp.SessionModeState {
  return { currentModeId: modeIdOf(thread), availableModes: MODES };
}

// ---- sessions ----------------------------------------------------------------------------

export function sessionInfo(thread: Thread): acp.SessionInfo {
  return {
    sessionId: thread.id,
    cwd: thread.workspacePath,
    ...(thread.displayName ? { title: thread.displayName } : {}),
    updatedAt: thread.lastActiveAt,
  };
}

// ---- prompts -----------------------------------------------------------------------------

/**
 * A prompt's content blocks as runtime input. Images stay references (the built-in engine
 * sends the model text only, so the face does not advertise image prompts); embedded text
 * resources are inlined; a file link becomes a fileRef, any other link a mention.
 */
export function toInput(blocks: acp.ContentBlock[]): InputPart[] {
  const parts: InputPart[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        parts.push({ type: "text", text: block.text });
        break;
      case "image":
        parts.push({ type: "image", url: block.uri ?? `data:${block.mimeType};base64,${block.data}` });
        break;
      case "resource_link":
        if (block.uri.startsWith("file://")) parts.push({ type: "fileRef", path: fileUriPath(block.uri) });
        else parts.push({ type: "text", text: `[${block.name}](${block.uri})` });
        break;
      case "resource": {
        const { resource } = block;
        if ("text" in resource) parts.push({ type: "text", text: `<context uri="${resource.uri}">\n${resource.text}\n</context>` });
        else parts.push({ type: "text", text: `[binary resource ${resource.uri} omitted]` });
        break;
      }
      case "audio":
        parts.push({ type: "text", text: "[audio omitted]" });
        break;
    }
  }
  return parts;
}

function fileUriPath(uri: string): string {
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri.slice("file://".length);
  }
}

// ---- turn ends ---------------------------------------------------------------------------

/**
 * How a turn's end answers session/prompt. A completed turn is end_turn, a cancelled one
 * (interrupt, or "cancel" answered to an approval) is cancelled, and a turn that hit the
 * engine's step limit is max_turn_requests. Any other failure is not a stop reason in ACP: the
 * prompt request fails with a JSON-RPC error (see errors.ts).
 */
export function stopReasonFor(
  end: { status: "completed" } | { status: "cancelled" } | { status: "failed"; error: TurnError },
): acp.StopReason | { error: TurnError } {
  if (end.status === "completed") return "end_turn";
  if (end.status === "cancelled") return "cancelled";
  if (end.error.code === "tooManySteps") return "max_turn_requests";
  return { error: end.error };
}

// ---- approvals ---------------------------------------------------------------------------

export const PERMISSION_OPTIONS: acp.PermissionOption[] = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject", kind: "reject_always" },
];

/**
 * The runtime decision for a permission outcome. allow_always is acceptAlways: a rule for
 * this workspace and scope key (the exact command, or the file) that outlives the process and
 * every client. reject_always declines; the session remembers it for the connection.
 * A cancelled outcome (the prompt was cancelled) cancels the turn.
 */
export function decisionFor(outcome: acp.RequestPermissionOutcome): ApprovalDecision {
  if (outcome.outcome === "cancelled") return "cancel";
  const kind = PERMISSION_OPTIONS.find((o) => o.optionId === outcome.optionId)?.kind;
  if (kind === "allow_once") return "accept";
  if (kind === "allow_always") return "acceptAlways";
  return "decline";
}

// ---- tools -------------------------------------------------------------------------------

const TOOL_KINDS: Record<string, acp.ToolKind> = {
  read_file: "read",
  list_files: "search",
  glob: "search",
  search_files: "search",
  write_file: "edit",
  edit: "edit",
  bash: "execute",
  update_plan: "think",
};

export function toolKind(toolName: string): acp.ToolKind {
  return TOOL_KINDS[toolName] ?? "other";
}

type Args = Record<string, unknown> | undefined;

function argsOf(value: unknown): Args {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A short human title for a tool call. */
export function toolTitle(toolName: string, rawArgs: unknown): string {
  const args = argsOf(rawArgs);
  const str = (key: string): string | undefined => (typeof args?.[key] === "string" ? (args[key] as string) : undefined);
  switch (toolName) {
    case "bash":
      return str("command") ? `\`${str("command")}\`` : "Run a command";
    case "read_file":
      return str("path") ? `Read ${str("path")}` : "Read a file";
    case "write_file":
      return str("path") ? `Write ${str("path")}` : "Write a file";
    case "edit":
      return str("path") ? `Edit ${str("path")}` : "Edit a file";
    case "list_files":
      return `List ${str("path") ?? "files"}`;
    case "glob":
      return str("pattern") ? `Find ${str("pattern")}` : "Find files";
    case "search_files":
      return str("pattern") ? `Search for ${str("pattern")}` : "Search files";
    case "update_plan":
      return "Update the plan";
    default:
      return toolName;
  }
}

export function toolLocations(workspacePath: string, rawArgs: unknown): acp.ToolCallLocation[] {
  const p = argsOf(rawArgs)?.path;
  return typeof p === "string" && p ? [{ path: path.resolve(workspacePath, p) }] : [];
}

/**
 * A file change as ACP diff content: one diff per hunk of the unified diff (the runtime keeps
 * the diff, not the whole files), with the hunk's old and new lines.
 */
export function diffContents(absolutePath: string, unifiedDiff: string, kind: "add" | "update"): acp.ToolCallContent[] {
  const contents: acp.ToolCallContent[] = [];
  for (const file of parsePatch(unifiedDiff)) {
    for (const hunk of file.hunks) {
      const oldLines: string[] = [];
      const newLines: string[] = [];
      for (const line of hunk.lines) {
        const sign = line[0];
        const text = line.slice(1);
        if (sign === " " || sign === "-") oldLines.push(text);
        if (sign === " " || sign === "+") newLines.push(text);
      }
      contents.push({
        type: "diff",
        path: absolutePath,
        oldText: kind === "add" ? null : oldLines.join("\n"),
        newText: newLines.join("\n"),
      });
    }
  }
  return contents;
}

function textContent(text: string): acp.ToolCallContent {
  return { type: "content", content: { type: "text", text } };
}

// ---- plan and usage ----------------------------------------------------------------------

export function planUpdate(plan: Pick<Plan, "steps">): acp.SessionUpdate {
  return {
    sessionUpdate: "plan",
    entries: plan.steps.map((s) => ({ content: s.step, status: s.status, priority: "medium" })),
  };
}

/**
 * usage_update: `used` is the context the last model call filled (its input plus output),
 * `size` the model's context window; the cost is the turn's so far, when priced.
 */
export function usageUpdate(usage: TokenUsage, delta: TokenUsage | undefined, contextWindow: number): acp.SessionUpdate {
  const last = delta ?? usage;
  return {
    sessionUpdate: "usage_update",
    used: last.inputTokens + last.outputTokens,
    size: contextWindow,
    ...(usage.costUsd !== undefined ? { cost: { amount: usage.costUsd, currency: "USD" } } : {}),
  };
}

// ---- items and events --------------------------------------------------------------------

/**
 * Turns a thread's items and events into session updates. It remembers which tool calls the
 * client has been told about (the first mention is a tool_call, later ones tool_call_update),
 * which messages were streamed (a completed message that was not is sent whole: history
 * replay, or a backend that does not stream), and the rich content each call showed (a diff
 * or a terminal is not replaced by the plain tool output).
 */
export class SessionUpdateMapper {
  private readonly announced = new Set<string>();
  private readonly streamed = new Set<string>();
  /** Diff or terminal content shown for a call, by call id. */
  private readonly rich = new Map<string, acp.ToolCallContent[]>();
  private readonly toolNames = new Map<string, string>();

  constructor(private readonly workspacePath: string) {}

  /** Updates for one committed runtime event; `ownTurn` leaves out the echo of the client's own prompt. */
  fromEvent(event: RuntimeEvent, ownTurn: boolean): acp.SessionUpdate[] {
    switch (event.type) {
      case "item.started":
        return this.started(event.data.item);
      case "item.delta": {
        const { kind, itemId, delta } = event.data;
        if (kind !== "agentMessage" && kind !== "reasoning") return [];
        this.streamed.add(itemId);
        return [
          {
            sessionUpdate: kind === "agentMessage" ? "agent_message_chunk" : "agent_thought_chunk",
            content: { type: "text", text: delta },
            messageId: itemId,
          },
        ];
      }
      case "item.completed":
        if (ownTurn && event.data.item.type === "userMessage" && !event.data.item.payload.steered) return [];
        // A failed turn's error answers session/prompt itself; replay shows it as text.
        if (event.data.item.type === "error") return [];
        return this.fromItem(event.data.item);
      case "turn.planUpdated":
        return [planUpdate(event.data.plan)];
      case "thread.renamed":
        return [{ sessionUpdate: "session_info_update", title: event.data.displayName }];
      default:
        return [];
    }
  }

  /** Updates for a finished item (live completion, or history replay). */
  fromItem(item: Item): acp.SessionUpdate[] {
    switch (item.type) {
      case "userMessage":
        return [{ sessionUpdate: "user_message_chunk", content: { type: "text", text: item.payload.text }, messageId: item.id }];
      case "agentMessage":
      case "reasoningContent": {
        if (this.streamed.delete(item.id) || !item.payload.text) return [];
        const sessionUpdate = item.type === "agentMessage" ? "agent_message_chunk" : "agent_thought_chunk";
        return [{ sessionUpdate, content: { type: "text", text: item.payload.text }, messageId: item.id }];
      }
      case "toolCall": {
        const { callId, toolName, arguments: args } = item.payload;
        this.toolNames.set(callId, toolName);
        const described = {
          title: toolTitle(toolName, args),
          kind: toolKind(toolName),
          locations: toolLocations(this.workspacePath, args),
          rawInput: args ?? item.payload.argumentsText,
        };
        return [this.call(callId, { ...described, status: "pending" })];
      }
      case "commandExecution": {
        const { callId, output, exitCode } = item.payload;
        const rawOutput = { exitCode: exitCode ?? null, ...(item.payload.timedOut ? { timedOut: true } : {}) };
        if (this.rich.has(callId)) return [this.call(callId, { rawOutput })];
        return [this.call(callId, { content: [textContent(fence(output))], rawOutput })];
      }
      case "fileChange": {
        const { callId, diff, kind } = item.payload;
        const contents = [
          ...(this.rich.get(callId) ?? []),
          ...diffContents(path.resolve(this.workspacePath, item.payload.path), diff, kind),
        ];
        this.rich.set(callId, contents);
        return [this.call(callId, { content: contents })];
      }
      case "dynamicToolCall":
      case "pluginFunctionCall": {
        // One item for the call and its result: a tool call, then its end once it has run.
        const { callId, toolName, arguments: args, output, success } = item.payload;
        const call = this.call(callId, {
          title: toolTitle(toolName, args),
          kind: "execute",
          rawInput: args ?? item.payload.argumentsText,
          status: "pending",
        });
        if (output === undefined) return [call];
        return [call, this.call(callId, { status: success ? "completed" : "failed", content: [textContent(output)] })];
      }
      case "toolResult": {
        const { callId, success, output } = item.payload;
        const status = success ? "completed" : "failed";
        const rich = this.rich.get(callId);
        // A shell call showed its output already; other tools show their result as text.
        const shell = this.toolNames.get(callId) === "bash";
        if (rich || (shell && success)) return [this.call(callId, { status, ...(rich ? {} : { rawOutput: output }) })];
        return [this.call(callId, { status, content: [textContent(output)] })];
      }
      case "toolExecution":
      case "approvalRequest":
      case "approvalResponse":
      case "systemNotice":
        return [];
      case "error":
        return [
          {
            sessionUpdate: "agent_message_chunk",
            content: { type: "text", text: `\n\nError: ${item.payload.message}` },
            messageId: item.id,
          },
        ];
    }
  }

  /** A terminal the client runs the call's command in: shown instead of the captured output. */
  terminal(callId: string, terminalId: string): acp.SessionUpdate {
    const content: acp.ToolCallContent[] = [{ type: "terminal", terminalId }];
    this.rich.set(callId, content);
    return this.call(callId, { content, status: "in_progress" });
  }

  /** The tool call as the approval question names it. */
  permissionToolCall(callId: string, fallbackTitle: string): acp.ToolCallUpdate {
    return { toolCallId: callId, status: "pending", ...(this.announced.has(callId) ? {} : { title: fallbackTitle }) };
  }

  private started(item: Item): acp.SessionUpdate[] {
    if (item.type === "toolExecution") return [this.call(item.payload.callId, { status: "in_progress" })];
    return [];
  }

  private call(callId: string, fields: Omit<acp.ToolCallUpdate, "toolCallId">): acp.SessionUpdate {
    if (this.announced.has(callId)) return { sessionUpdate: "tool_call_update", toolCallId: callId, ...fields };
    this.announced.add(callId);
    const { title, kind, status, content, locations, rawInput, rawOutput } = fields;
    return {
      sessionUpdate: "tool_call",
      toolCallId: callId,
      title: title ?? this.toolNames.get(callId) ?? "tool",
      ...(kind ? { kind } : {}),
      ...(status ? { status } : {}),
      ...(content ? { content } : {}),
      ...(locations ? { locations } : {}),
      ...(rawInput !== undefined ? { rawInput } : {}),
      ...(rawOutput !== undefined ? { rawOutput } : {}),
    };
  }
}

function fence(output: string): string {
  return "```\n" + output.replace(/\n?$/, "\n") + "```";
}

/** Every update that replays a thread's history, oldest first. */
export function replayUpdates(mapper: SessionUpdateMapper, turns: Array<{ items?: Item[]; id: string }>, plan?: Plan): acp.SessionUpdate[] {
  const updates = turns.flatMap((t) => (t.items ?? []).flatMap((item) => mapper.fromItem(item)));
  if (plan) updates.push(planUpdate(plan));
  return updates;
}
