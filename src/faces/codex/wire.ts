// Runtime objects in the Codex dialect's shapes, and Codex's inputs and policies in the runtime's.
import type { InputPart, Item, ItemOf, Thread as RuntimeThread, ThreadConfiguration, Turn as RuntimeTurn } from "../../domain/model.js";
import type { ListedModel } from "../../providers/model-catalog.js";
import type { AskForApproval, Model, Thread, ThreadItem, Turn, UserInput } from "./protocol.js";

/** The origin channel of threads started through this face. */
export const CODEX_CHANNEL = "codex";

/**
 * Codex's clients parse thread ids as UUIDs. A runtime thread id (`thread_20261125_<12 hex>`)
 * is written as the UUID `20261125-0000-4000-8000-<12 hex>` and read back; any other id is passed
 * as it is.
 */
export function codexThreadId(threadId: string): string {
  const match = /^thread_(\d{8})_([0-9a-f]{12})$/.exec(threadId);
  return match ? `${match[1]}-0000-4000-8000-${match[2]}` : threadId;
}

export function runtimeThreadId(codexId: string): string {
  const match = /^(\d{8})-0000-4000-8000-([0-9a-f]{12})$/i.exec(codexId);
  return match ? `thread_${match[1]}_${match[2]!.toLowerCase()}` : codexId;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export const seconds = (iso: string): number => Math.floor(Date.parse(iso) / 1000);
const millis = (iso: string | undefined): number | null => (iso ? Date.parse(iso) : null);

export function toInput(parts: UserInput[]): InputPart[] {
  return parts.flatMap((part): InputPart[] => {
    switch (part.type) {
      case "text":
        return [{ type: "text", text: part.text }];
      case "image":
        return [{ type: "image", url: part.url }];
      case "localImage":
        return [{ type: "localImage", path: part.path }];
      case "skill":
        return [{ type: "skillRef", name: part.name }];
      case "mention":
        return [{ type: "fileRef", path: part.path }];
    }
  });
}

function toUserInput(parts: InputPart[]): UserInput[] {
  return parts.flatMap((part): UserInput[] => {
    switch (part.type) {
      case "text":
        return [{ type: "text", text: part.text, text_elements: [] }];
      case "image":
        return [{ type: "image", url: part.url }];
      case "localImage":
        return [{ type: "localImage", path: part.path }];
      case "skillRef":
        return [{ type: "skill", name: part.name, path: "" }];
      case "fileRef":
        return [{ type: "mention", name: part.path, path: part.path }];
      case "commandRef":
        return [{ type: "text", text: `/${part.name}${part.args ? ` ${part.args}` : ""}`, text_elements: [] }];
    }
  });
}

/**
 * Codex's approval policy as the runtime's: "never" never asks; the others ask. (Codex's
 * "untrusted" also asks before commands it knows to be safe; the runtime asks before every
 * command either way.)
 */
export function approvalConfiguration(policy: AskForApproval | null | undefined): ThreadConfiguration {
  if (policy === undefined || policy === null) return {};
  return { approvalPolicy: policy === "never" ? "autoApprove" : "default" };
}

export function askForApproval(configuration: ThreadConfiguration | undefined): AskForApproval {
  return configuration?.approvalPolicy === "autoApprove" ? "never" : "on-request";
}

/**
 * One runtime item as a Codex ThreadItem, or undefined for what Codex shows otherwise (tool
 * results are part of their call's item; approvals are server requests) or not at all.
 */
export function threadItem(item: Item): ThreadItem | undefined {
  const times = { startedAtMs: millis(item.createdAt), completedAtMs: millis(item.completedAt) };
  const done = item.status === "completed";
  switch (item.type) {
    case "userMessage":
      return { type: "userMessage", id: item.id, ...times, clientId: null, content: toUserInput(item.payload.input) };
    case "agentMessage":
      return {
        type: "agentMessage",
        id: item.id,
        ...times,
        text: item.payload.text,
        phase: null,
        moderation: null,
        memoryCitation: null,
        delivery: null,
        questions: null,
      };
    case "reasoningContent":
      return { type: "reasoning", id: item.id, ...times, summary: [], content: [item.payload.text] };
    case "commandExecution": {
      const { exitCode } = item.payload;
      return {
        type: "commandExecution",
        id: item.id,
        ...times,
        pluginId: null,
        scriptPath: null,
        command: item.payload.command,
        cwd: item.payload.cwd,
        processId: null,
        source: "agent",
        status: !done ? "inProgress" : exitCode === 0 ? "completed" : "failed",
        commandActions: [{ type: "unknown", command: item.payload.command }],
        aggregatedOutput: done || item.payload.output ? item.payload.output : null,
        exitCode: exitCode ?? null,
        durationMs: item.completedAt ? Date.parse(item.completedAt) - Date.parse(item.createdAt) : null,
      };
    }
    case "fileChange":
      return {
        type: "fileChange",
        id: item.id,
        ...times,
        changes: [
          {
            path: item.payload.path,
            kind: item.payload.kind === "add" ? { type: "add" } : { type: "update", move_path: null },
            diff: item.payload.diff,
          },
        ],
        status: done ? "completed" : "inProgress",
      };
    case "toolCall":
      // Only MCP tools have an item of their own in Codex; its built-in tools show as commands and
      // file changes. The call is in progress until its result (mcpToolCall below).
      return item.payload.mcpServer ? mcpToolCall(item) : undefined;
    case "dynamicToolCall":
    case "pluginFunctionCall": {
      const { output, success } = item.payload;
      return {
        type: "dynamicToolCall",
        id: item.id,
        ...times,
        namespace: null,
        tool: item.payload.toolName,
        arguments: item.payload.arguments ?? {},
        status: !done ? "inProgress" : success === false ? "failed" : "completed",
        contentItems: output !== undefined ? [{ type: "inputText", text: output }] : null,
        success: success ?? null,
        durationMs: null,
      };
    }
    case "toolResult":
    case "toolExecution":
    case "approvalRequest":
    case "approvalResponse":
    case "error":
    case "systemNotice":
      return undefined;
  }
}

/** An MCP tool call as Codex's one item for it: the call, and once it ran, its result. */
export function mcpToolCall(call: ItemOf<"toolCall">, result?: ItemOf<"toolResult">): ThreadItem {
  const output = result?.payload.output ?? "";
  return {
    type: "mcpToolCall",
    id: call.id,
    startedAtMs: millis(call.createdAt),
    completedAtMs: millis(result?.completedAt),
    server: call.payload.mcpServer ?? "",
    tool: call.payload.toolName.replace(/^mcp__.+?__/, ""),
    status: !result ? "inProgress" : result.payload.success ? "completed" : "failed",
    arguments: call.payload.arguments ?? {},
    appContext: null,
    mcpAppUi: null,
    pluginId: null,
    readOnlyHint: null,
    result: result?.payload.success ? { content: [{ type: "text", text: output }], structuredContent: null, _meta: null } : null,
    error: result && !result.payload.success ? { message: output } : null,
    durationMs: null,
  };
}

/** A turn's items as Codex's: an MCP call and its result become one item. */
export function threadItems(items: Item[]): ThreadItem[] {
  const results = new Map(items.flatMap((i) => (i.type === "toolResult" ? [[i.payload.callId, i] as const] : [])));
  return items.flatMap((item) => {
    if (item.type === "toolCall" && item.payload.mcpServer) return [mcpToolCall(item, results.get(item.payload.callId))];
    return threadItem(item) ?? [];
  });
}

export function turnStatus(status: RuntimeTurn["status"]): Turn["status"] {
  switch (status) {
    case "completed":
      return "completed";
    case "failed":
      return "failed";
    case "cancelled":
      return "interrupted";
    case "running":
    case "waitingApproval":
      return "inProgress";
  }
}

export function codexTurn(turn: RuntimeTurn, withItems = true): Turn {
  const durationMs = turn.completedAt ? Date.parse(turn.completedAt) - Date.parse(turn.startedAt) : null;
  return {
    id: turn.id,
    rootTurnId: null,
    items: withItems ? threadItems(turn.items ?? []) : [],
    itemsView: withItems ? "full" : "notLoaded",
    status: turnStatus(turn.status),
    error: turn.error
      ? { message: turn.error.message, codexErrorInfo: null, additionalDetails: turn.error.code, misalignment: null }
      : null,
    startedAt: seconds(turn.startedAt),
    completedAt: turn.completedAt ? seconds(turn.completedAt) : null,
    durationMs,
  };
}

export interface ThreadFacts {
  /** The thread's turns, when they are part of the answer. */
  turns?: RuntimeTurn[];
  /** Turns to take the preview from (at least the first). */
  previewFrom: RuntimeTurn[];
  running: boolean;
  waitingOnApproval: boolean;
  provider: string;
  model: string | null;
  serverVersion: string;
}

export function codexThread(thread: RuntimeThread, facts: ThreadFacts): Thread {
  const parent = thread.metadata.parentThreadId;
  return {
    id: codexThreadId(thread.id),
    sessionId: codexThreadId(thread.id),
    forkedFromId: thread.forkedFrom ? codexThreadId(thread.forkedFrom.threadId) : null,
    parentThreadId: typeof parent === "string" ? codexThreadId(parent) : null,
    preview: preview(facts.previewFrom) ?? thread.displayName ?? "",
    ephemeral: thread.metadata.ephemeral === true,
    section: null,
    sectionEnteredAt: null,
    projectId: null,
    historyMode: "legacy",
    modelProvider: facts.provider,
    model: facts.model,
    reasoningEffort: null,
    createdAt: seconds(thread.createdAt),
    updatedAt: seconds(thread.lastActiveAt),
    recencyAt: seconds(thread.lastActiveAt),
    status: facts.running ? { type: "active", activeFlags: facts.waitingOnApproval ? ["waitingOnApproval"] : [] } : { type: "idle" },
    path: null,
    cwd: thread.workspacePath,
    cliVersion: facts.serverVersion,
    originator: thread.originChannel,
    // Threads of other faces are named by the face that started them.
    source: thread.originChannel === CODEX_CHANNEL ? "cli" : { custom: thread.originChannel },
    threadSource: null,
    agentNickname: null,
    agentRole: null,
    gitInfo: null,
    name: thread.displayName ?? null,
    turns: (facts.turns ?? []).map((turn) => codexTurn(turn)),
  };
}

/** The first user message's text: what Codex shows for a thread in its lists. */
function preview(turns: RuntimeTurn[]): string | undefined {
  const text = turns[0]?.input.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(" ");
  return text || undefined;
}

export function codexModel(model: ListedModel): Model {
  return {
    id: model.id,
    model: model.id,
    upgrade: null,
    upgradeInfo: null,
    availabilityNux: null,
    displayName: model.displayName ?? model.id,
    description: `${model.displayName ?? model.id} (${model.provider})`,
    modelSpecialty: null,
    hidden: false,
    supportedReasoningEfforts: [{ reasoningEffort: "medium", description: "The provider's default." }],
    defaultReasoningEffort: "medium",
    inputModalities: model.inputModalities ?? ["text"],
    supportsPersonality: false,
    multiAgentVersion: null,
    additionalSpeedTiers: [],
    serviceTiers: [],
    defaultServiceTier: null,
    availableAccessPrograms: null,
    isDefault: model.isDefault,
  };
}
