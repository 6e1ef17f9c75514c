// Codex app-server notifications of one turn → Switchyard items, usage, plan and diff. Pure: it
// only calls the sink it is given (a TurnRecorder and the turn's report functions), so it is
// tested without a process.
import path from "node:path";
import type { ItemOf, PlanStep, TokenUsage } from "../../domain/model.js";
import type { TurnRecorder } from "../../domain/turn-recorder.js";
import { fileDiff } from "../../tools/diff.js";
import {
  DeltaNotification,
  ErrorNotification,
  ItemNotification,
  SummaryPartAdded,
  TokenUsageUpdated,
  TurnCompleted,
  TurnDiffUpdated,
  TurnPlanUpdated,
  type FileUpdateChange,
  type ThreadItem,
  type TokenUsageBreakdown,
} from "./wire.js";

export interface MapperSink {
  readonly recorder: Pick<TurnRecorder, "start" | "delta" | "appendText" | "complete" | "record">;
  reportUsage(usage: TokenUsage): void;
  reportPlan(plan: { explanation?: string; steps: PlanStep[] }): void;
  reportDiff(diff: string): void;
}

/** How codex ended the turn (from turn/completed). */
export type TurnCompletion = { status: "completed" } | { status: "interrupted" } | { status: "failed"; message: string };

type Open =
  | { kind: "message"; item: ItemOf<"agentMessage"> }
  | { kind: "reasoning"; item?: ItemOf<"reasoningContent">; parts: number }
  | { kind: "command"; item: ItemOf<"commandExecution"> }
  | { kind: "tool"; item: ItemOf<"toolCall"> }
  | { kind: "fileChange"; changes: FileUpdateChange[] };

export class CodexTurnMapper {
  private readonly open = new Map<string, Open>();
  /** Per-file diffs recorded this turn, used as the turn's diff until codex sends its own. */
  private readonly fileDiffs = new Map<string, string>();
  private codexDiffSeen = false;
  /** The last non-retried error codex reported, for a failed turn without its own message. */
  lastError: string | undefined;

  constructor(
    private readonly sink: MapperSink,
    /** The workspace: file paths are shown relative to it. */
    private readonly workspace: string,
    /** Codex's thread-wide token total before this turn (undefined: unknown, e.g. just resumed). */
    public usageTotal?: TokenUsageBreakdown,
  ) {}

  /** The command of a commandExecution item, for its approval request. */
  command(itemId: string): { command: string; cwd: string } | undefined {
    const open = this.open.get(itemId);
    return open?.kind === "command" ? { command: open.item.payload.command, cwd: open.item.payload.cwd } : undefined;
  }

  /** The changes of a fileChange item, for its approval request. */
  fileChanges(itemId: string): FileUpdateChange[] | undefined {
    const open = this.open.get(itemId);
    return open?.kind === "fileChange" ? open.changes : undefined;
  }

  relative(file: string): string {
    const rel = path.relative(this.workspace, path.resolve(this.workspace, file));
    return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : file;
  }

  /** Handles one notification; returns how the turn ended when it is turn/completed. */
  handle(method: string, params: unknown): TurnCompletion | undefined {
    switch (method) {
      case "item/started": {
        const parsed = ItemNotification.safeParse(params);
        if (parsed.success) this.started(parsed.data.item);
        return undefined;
      }
      case "item/completed": {
        const parsed = ItemNotification.safeParse(params);
        if (parsed.success) this.completed(parsed.data.item);
        return undefined;
      }
      case "item/agentMessage/delta":
      case "item/plan/delta":
        this.withDelta(params, (open, delta) => {
          if (open?.kind !== "message") return;
          this.sink.recorder.appendText(open.item, "agentMessage", delta);
        });
        return undefined;
      case "item/reasoning/summaryTextDelta":
      case "item/reasoning/textDelta":
        this.withDelta(params, (open, delta, itemId) => this.reasoningDelta(itemId, open, delta));
        return undefined;
      case "item/reasoning/summaryPartAdded": {
        const parsed = SummaryPartAdded.safeParse(params);
        const open = parsed.success ? this.open.get(parsed.data.itemId) : undefined;
        // Summary parts after the first are separate paragraphs.
        if (parsed.success && open?.kind === "reasoning" && parsed.data.summaryIndex > 0 && open.item) {
          this.reasoningDelta(parsed.data.itemId, open, "\n\n");
        }
        return undefined;
      }
      case "item/commandExecution/outputDelta":
        this.withDelta(params, (open, delta) => {
          if (open?.kind !== "command") return;
          open.item.payload.output += delta;
          this.sink.recorder.delta(open.item, "commandOutput", delta, "stdout");
        });
        return undefined;
      case "turn/diff/updated": {
        const parsed = TurnDiffUpdated.safeParse(params);
        if (parsed.success) {
          this.codexDiffSeen = true;
          this.sink.reportDiff(parsed.data.diff);
        }
        return undefined;
      }
      case "turn/plan/updated": {
        const parsed = TurnPlanUpdated.safeParse(params);
        if (parsed.success) {
          const { explanation, plan } = parsed.data;
          this.sink.reportPlan({
            ...(explanation ? { explanation } : {}),
            steps: plan.map((s) => ({ step: s.step, status: planStatus(s.status) })),
          });
        }
        return undefined;
      }
      case "thread/tokenUsage/updated": {
        const parsed = TokenUsageUpdated.safeParse(params);
        if (parsed.success) this.usage(parsed.data.tokenUsage.total, parsed.data.tokenUsage.last);
        return undefined;
      }
      case "error": {
        const parsed = ErrorNotification.safeParse(params);
        if (parsed.success && !parsed.data.willRetry) this.lastError = errorText(parsed.data.error);
        return undefined;
      }
      case "turn/completed": {
        const parsed = TurnCompleted.safeParse(params);
        if (!parsed.success) return undefined;
        const { status, error } = parsed.data.turn;
        if (status === "interrupted") return { status: "interrupted" };
        if (status === "failed")
          return { status: "failed", message: error ? errorText(error) : (this.lastError ?? "Codex reported the turn as failed.") };
        return { status: "completed" };
      }
      default:
        return undefined;
    }
  }

  private withDelta(params: unknown, apply: (open: Open | undefined, delta: string, itemId: string) => void): void {
    const parsed = DeltaNotification.safeParse(params);
    if (parsed.success) apply(this.open.get(parsed.data.itemId), parsed.data.delta, parsed.data.itemId);
  }

  private reasoningDelta(itemId: string, open: Open | undefined, delta: string): void {
    let entry = open;
    if (!entry) this.open.set(itemId, (entry = { kind: "reasoning", parts: 0 }));
    if (entry.kind !== "reasoning") return;
    // Codex announces a reasoning item for every model call, often with nothing in it: it is
    // recorded only once it has text.
    entry.item ??= this.sink.recorder.start("reasoningContent", { text: "" });
    this.sink.recorder.appendText(entry.item, "reasoning", delta);
  }

  private started(item: ThreadItem): void {
    const { recorder } = this.sink;
    switch (item.type) {
      case "agentMessage":
      case "plan": {
        const started = recorder.start("agentMessage", { text: "" });
        if (item.text) {
          started.payload.text = item.text;
          recorder.delta(started, "agentMessage", item.text);
        }
        this.open.set(item.id, { kind: "message", item: started });
        return;
      }
      case "reasoning":
        this.open.set(item.id, { kind: "reasoning", parts: 0 });
        return;
      case "commandExecution":
        this.open.set(item.id, {
          kind: "command",
          item: recorder.start("commandExecution", {
            callId: item.id,
            command: item.command ?? "",
            cwd: item.cwd ?? this.workspace,
            output: "",
          }),
        });
        return;
      case "fileChange":
        this.open.set(item.id, { kind: "fileChange", changes: item.changes ?? [] });
        return;
      case "mcpToolCall":
      case "dynamicToolCall":
      case "webSearch": {
        const call = toolCallOf(item);
        this.open.set(item.id, { kind: "tool", item: recorder.start("toolCall", call) });
        return;
      }
      default:
        return; // userMessage (recorded by the backend), contextCompaction, imageView, ...
    }
  }

  private completed(item: ThreadItem): void {
    const { recorder } = this.sink;
    if (!this.open.has(item.id)) this.started(item);
    const open = this.open.get(item.id);
    this.open.delete(item.id);
    switch (open?.kind) {
      case "message":
        recorder.complete(open.item, { text: item.text ?? open.item.payload.text });
        return;
      case "reasoning": {
        const final = reasoningText(item);
        if (open.item) recorder.complete(open.item, final ? { text: final } : {});
        else if (final) recorder.record("reasoningContent", { text: final });
        return;
      }
      case "command":
        recorder.complete(open.item, {
          output: item.aggregatedOutput ?? open.item.payload.output,
          exitCode: item.exitCode ?? null,
        });
        return;
      case "fileChange":
        // A declined or failed patch changed nothing.
        if (item.status !== "declined" && item.status !== "failed") {
          this.recordFileChanges(item.id, item.changes ?? open.changes);
        }
        return;
      case "tool": {
        recorder.complete(open.item);
        const { success, output } = toolResultOf(item);
        recorder.record("toolResult", { callId: item.id, toolName: open.item.payload.toolName, success, output });
        return;
      }
      default:
        if (item.type === "contextCompaction") {
          recorder.record("systemNotice", {
            kind: "backendCompaction",
            message: "Codex compacted the conversation to fit its context window.",
          });
        }
        return;
    }
  }

  private recordFileChanges(callId: string, changes: FileUpdateChange[]): void {
    for (const change of changes) {
      const rel = this.relative(change.path);
      const diff = renderDiff(rel, change);
      this.sink.recorder.record("fileChange", { callId, path: rel, kind: change.kind.type === "add" ? "add" : "update", diff });
      this.fileDiffs.set(rel, diff);
    }
    if (!this.codexDiffSeen && changes.length > 0) {
      this.sink.reportDiff(
        [...this.fileDiffs.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([, d]) => d)
          .join(""),
      );
    }
  }

  private usage(total: TokenUsageBreakdown, last: TokenUsageBreakdown): void {
    const before = this.usageTotal;
    this.usageTotal = total;
    // `total` is the thread's running sum, so the call's share is the difference; right after a
    // (re)start there is no earlier total, and `last` (the latest call) is used.
    const delta = before ? subtract(total, before) : last;
    if (delta.totalTokens <= 0 && delta.inputTokens <= 0 && delta.outputTokens <= 0) return;
    this.sink.reportUsage({
      inputTokens: delta.inputTokens,
      outputTokens: delta.outputTokens,
      totalTokens: delta.totalTokens,
      ...(delta.cachedInputTokens ? { cachedInputTokens: delta.cachedInputTokens } : {}),
      ...(delta.reasoningOutputTokens ? { reasoningTokens: delta.reasoningOutputTokens } : {}),
    });
  }
}

function subtract(a: TokenUsageBreakdown, b: TokenUsageBreakdown): TokenUsageBreakdown {
  return {
    totalTokens: a.totalTokens - b.totalTokens,
    inputTokens: a.inputTokens - b.inputTokens,
    cachedInputTokens: a.cachedInputTokens - b.cachedInputTokens,
    outputTokens: a.outputTokens - b.outputTokens,
    reasoningOutputTokens: a.reasoningOutputTokens - b.reasoningOutputTokens,
  };
}

function planStatus(status: string): PlanStep["status"] {
  if (status === "inProgress" || status === "in_progress") return "in_progress";
  return status === "completed" ? "completed" : "pending";
}

function errorText(error: { message: string; additionalDetails?: string | null | undefined }): string {
  return error.additionalDetails ? `${error.message}\n${error.additionalDetails}` : error.message;
}

function reasoningText(item: ThreadItem): string {
  const summary = (item.summary ?? []).join("\n\n");
  if (summary) return summary;
  return Array.isArray(item.content) ? item.content.filter((c): c is string => typeof c === "string").join("\n\n") : "";
}

function toolCallOf(item: ThreadItem): { callId: string; toolName: string; argumentsText: string; arguments?: unknown } {
  if (item.type === "webSearch") {
    const args = { query: item.query ?? "" };
    return { callId: item.id, toolName: "web_search", argumentsText: JSON.stringify(args), arguments: args };
  }
  const toolName = item.server ? `${item.server}/${item.tool ?? "tool"}` : (item.tool ?? item.type);
  const args = item.arguments ?? {};
  return { callId: item.id, toolName, argumentsText: JSON.stringify(args), arguments: args };
}

function toolResultOf(item: ThreadItem): { success: boolean; output: string } {
  if (item.type === "webSearch") return { success: true, output: item.query ? `Searched the web for: ${item.query}` : "Searched the web." };
  if (item.error) return { success: false, output: item.error.message };
  const success = item.success ?? item.status !== "failed";
  const content = item.type === "mcpToolCall" ? (item.result as { content?: unknown } | null | undefined)?.content : item.contentItems;
  return { success, output: contentText(content) };
}

/** The text of MCP / dynamic tool content items (other kinds as JSON). */
function contentText(content: unknown): string {
  if (!Array.isArray(content)) return content === undefined || content === null ? "" : JSON.stringify(content);
  return content
    .map((part) => {
      const p = part as { type?: unknown; text?: unknown };
      return (p.type === "text" || p.type === "inputText") && typeof p.text === "string" ? p.text : JSON.stringify(part);
    })
    .join("\n");
}

/**
 * A git-style diff for one change. Codex gives an added or deleted file's content, and for an
 * update the unified diff's hunks (with or without ---/+++ lines).
 */
export function renderDiff(rel: string, change: FileUpdateChange): string {
  const kind = change.kind.type;
  if (kind === "add") return fileDiff(rel, null, change.diff);
  if (kind === "delete")
    return `diff --git a/${rel} b/${rel}\ndeleted file mode 100644\n--- a/${rel}\n+++ /dev/null\n${deletedHunk(change.diff)}`;
  if (change.diff.startsWith("diff --git")) return ensureNewline(change.diff);
  const header = change.diff.startsWith("--- ") ? "" : `--- a/${rel}\n+++ b/${rel}\n`;
  return `diff --git a/${rel} b/${rel}\n${header}${ensureNewline(change.diff)}`;
}

function deletedHunk(content: string): string {
  const lines = content.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (lines.length === 0) return "";
  return `@@ -1,${lines.length} +0,0 @@\n${lines.map((l) => `-${l}`).join("\n")}\n`;
}

function ensureNewline(text: string): string {
  return text.endsWith("\n") || text === "" ? text : `${text}\n`;
}
