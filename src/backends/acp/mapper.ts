// ACP session updates of one turn → Switchyard items, plan and diff. Pure: it only calls the
// sink it is given, so it is tested without a process. Text and thoughts stream into messages;
// an `execute` tool call becomes a commandExecution, an edit's diff content fileChange items,
// any other tool call a toolCall with its toolResult.
import path from "node:path";
import type * as acp from "@agentclientprotocol/sdk";
import type { ItemOf, PlanStep } from "../../domain/model.js";
import type { TurnRecorder } from "../../domain/turn-recorder.js";
import { fileDiff } from "../../tools/diff.js";
import type { ApprovalAsk } from "../../tools/tool.js";

export interface AcpMapperSink {
  readonly recorder: Pick<TurnRecorder, "start" | "delta" | "appendText" | "complete" | "record">;
  reportPlan(plan: { explanation?: string; steps: PlanStep[] }): void;
  reportDiff(diff: string): void;
}

/** What the mapper knows of one tool call: the agent sends it in pieces. */
interface Call {
  title: string;
  kind: acp.ToolKind;
  rawInput?: unknown;
  content: acp.ToolCallContent[];
  rawOutput?: unknown;
  command?: ItemOf<"commandExecution">;
  tool?: ItemOf<"toolCall">;
  /** The terminal the command runs in, when it runs in one Switchyard serves. */
  terminalId?: string;
  /** The exit code, once an update's rawOutput gave one (a later rawOutput may be plain text). */
  exitCode?: number | null;
}

const FILE_KINDS: ReadonlySet<acp.ToolKind> = new Set(["edit", "delete", "move"]);

export class AcpTurnMapper {
  private message: ItemOf<"agentMessage"> | undefined;
  private thought: ItemOf<"reasoningContent"> | undefined;
  private readonly calls = new Map<string, Call>();
  /** Per-file diffs of the turn, published as the turn's diff. */
  private readonly fileDiffs = new Map<string, string>();
  /** The session's cumulative cost as last reported (USD), for the turn's share. */
  costUsd: number | undefined;

  constructor(
    private readonly sink: AcpMapperSink,
    /** The workspace: file paths are shown relative to it. */
    private readonly workspace: string,
    /** Called when a command's tool call names the terminal it runs in. */
    private readonly onTerminal: (terminalId: string, item: ItemOf<"commandExecution">) => void = () => {},
  ) {}

  handle(update: acp.SessionUpdate): void {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        if (update.content.type === "text") this.text("message", update.content.text);
        return;
      case "agent_thought_chunk":
        if (update.content.type === "text") this.text("thought", update.content.text);
        return;
      case "tool_call":
        this.closeText();
        this.toolCall(update);
        return;
      case "tool_call_update":
        this.closeText();
        this.toolCall(update);
        return;
      case "plan":
        this.sink.reportPlan({ steps: update.entries.map((e) => ({ step: e.content, status: e.status })) });
        return;
      case "usage_update":
        if (update.cost && update.cost.currency === "USD") this.costUsd = update.cost.amount;
        return;
      case "notice":
        this.closeText();
        this.sink.recorder.record("systemNotice", {
          kind: "backendNotice",
          message: update.description ? `${update.title}: ${update.description}` : update.title,
        });
        return;
      default:
        // user_message_chunk (history replay), modes, commands, config and session info.
        return;
    }
  }

  /** The approval question for a permission request about a tool call. */
  permissionAsk(toolCall: acp.ToolCallUpdate): ApprovalAsk {
    const known = this.calls.get(toolCall.toolCallId);
    const kind = toolCall.kind ?? known?.kind ?? "other";
    const title = toolCall.title ?? known?.title ?? "a tool";
    if (FILE_KINDS.has(kind)) {
      const paths = this.pathsOf(toolCall).map((p) => this.relative(p));
      return {
        approvalType: "file",
        operation: paths.length ? `${kind} ${paths.join(", ")}` : title,
        target: paths.length === 1 ? path.resolve(this.workspace, paths[0]!) : this.workspace,
        scopeKey: `file:${paths.join(",") || title}`,
        reason: `The agent wants to ${kind} files.`,
      };
    }
    const command = commandOf(toolCall.rawInput ?? known?.rawInput) ?? title;
    return {
      approvalType: "shell",
      operation: command,
      target: this.workspace,
      scopeKey: kind === "execute" ? `shell:${command.trim()}` : `tool:${title}`,
      reason: kind === "execute" ? "The agent wants to run a command." : `The agent wants to use ${title}.`,
    };
  }

  /** Absolute paths a tool call touches: its locations and its diffs. */
  pathsOf(toolCall: acp.ToolCallUpdate): string[] {
    const known = this.calls.get(toolCall.toolCallId);
    const locations = toolCall.locations ?? [];
    const diffs = (toolCall.content ?? known?.content ?? []).filter((c): c is acp.Diff & { type: "diff" } => c.type === "diff");
    return [...new Set([...locations.map((l) => l.path), ...diffs.map((d) => d.path)].map((p) => path.resolve(this.workspace, p)))];
  }

  relative(file: string): string {
    const rel = path.relative(this.workspace, path.resolve(this.workspace, file));
    return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel.split(path.sep).join("/") : file;
  }

  /** Closes whatever is still open (the turn ended, was cancelled or failed). */
  finish(): void {
    this.closeText();
    for (const [id, call] of this.calls) this.completeCall(id, call, "failed");
    this.calls.clear();
  }

  // ---- text -----------------------------------------------------------------------------------

  private text(which: "message" | "thought", text: string): void {
    const { recorder } = this.sink;
    if (which === "message") {
      if (this.thought) this.closeThought();
      this.message ??= recorder.start("agentMessage", { text: "" });
      recorder.appendText(this.message, "agentMessage", text);
    } else {
      if (this.message) this.closeMessage();
      this.thought ??= recorder.start("reasoningContent", { text: "" });
      recorder.appendText(this.thought, "reasoning", text);
    }
  }

  private closeText(): void {
    this.closeMessage();
    this.closeThought();
  }

  private closeMessage(): void {
    if (this.message) this.sink.recorder.complete(this.message);
    this.message = undefined;
  }

  private closeThought(): void {
    if (this.thought) this.sink.recorder.complete(this.thought);
    this.thought = undefined;
  }

  // ---- tool calls -----------------------------------------------------------------------------

  private toolCall(update: acp.ToolCallUpdate): void {
    const id = update.toolCallId;
    let call = this.calls.get(id);
    if (!call) {
      call = { title: update.title ?? "tool", kind: update.kind ?? "other", content: [] };
      this.calls.set(id, call);
    }
    if (update.title) call.title = update.title;
    if (update.kind) call.kind = update.kind;
    if (update.rawInput !== undefined) call.rawInput = update.rawInput;
    if (update.rawOutput !== undefined) {
      call.rawOutput = update.rawOutput;
      const exitCode = exitCodeOf(update.rawOutput);
      if (exitCode !== undefined) call.exitCode = exitCode;
    }
    if (update.content) call.content = update.content;
    this.open(id, call);
    if (call.command) this.commandProgress(call, call.command);
    if (update.status === "completed" || update.status === "failed") {
      this.completeCall(id, call, update.status);
      this.calls.delete(id);
    }
  }

  /** Starts the call's item once its kind is known: a command, or a tool call (edits wait for their diff). */
  private open(id: string, call: Call): void {
    if (call.command || call.tool || FILE_KINDS.has(call.kind)) return;
    const { recorder } = this.sink;
    if (call.kind === "execute") {
      call.command = recorder.start("commandExecution", {
        callId: id,
        command: commandOf(call.rawInput) ?? call.title,
        cwd: cwdOf(call.rawInput) ?? this.workspace,
        output: "",
      });
      return;
    }
    const args = call.rawInput ?? {};
    call.tool = recorder.start("toolCall", { callId: id, toolName: call.title, argumentsText: JSON.stringify(args), arguments: args });
  }

  /** A command's output so far: the terminal it runs in, or the text content the agent sends. */
  private commandProgress(call: Call, item: ItemOf<"commandExecution">): void {
    const terminal = call.content.find((c): c is acp.Terminal & { type: "terminal" } => c.type === "terminal");
    if (terminal && !call.terminalId) {
      call.terminalId = terminal.terminalId;
      this.onTerminal(terminal.terminalId, item);
      return;
    }
    if (call.terminalId) return;
    const text = unfence(contentText(call.content));
    if (text.length > item.payload.output.length && text.startsWith(item.payload.output)) {
      const delta = text.slice(item.payload.output.length);
      item.payload.output = text;
      this.sink.recorder.delta(item, "commandOutput", delta, "stdout");
    } else if (text) {
      item.payload.output = text;
    }
  }

  private completeCall(id: string, call: Call, status: "completed" | "failed"): void {
    const { recorder } = this.sink;
    if (call.command) {
      const exitCode = call.exitCode !== undefined ? call.exitCode : status === "completed" ? 0 : null;
      recorder.complete(call.command, { exitCode });
      return;
    }
    const diffs = call.content.filter((c): c is acp.Diff & { type: "diff" } => c.type === "diff");
    if (FILE_KINDS.has(call.kind) && diffs.length > 0) {
      if (status === "completed") this.recordDiffs(id, diffs);
      return;
    }
    const tool = call.tool ?? this.startTool(id, call);
    recorder.complete(tool);
    const output = contentText(call.content) || (call.rawOutput === undefined ? "" : JSON.stringify(call.rawOutput));
    recorder.record("toolResult", { callId: id, toolName: call.title, success: status === "completed", output });
  }

  private startTool(id: string, call: Call): ItemOf<"toolCall"> {
    const args = call.rawInput ?? {};
    return this.sink.recorder.start("toolCall", { callId: id, toolName: call.title, argumentsText: JSON.stringify(args), arguments: args });
  }

  private recordDiffs(callId: string, diffs: acp.Diff[]): void {
    for (const d of diffs) {
      const rel = this.relative(d.path);
      const diff = fileDiff(rel, d.oldText ?? null, d.newText);
      this.sink.recorder.record("fileChange", { callId, path: rel, kind: d.oldText == null ? "add" : "update", diff });
      this.fileDiffs.set(rel, (this.fileDiffs.get(rel) ?? "") + diff);
    }
    this.sink.reportDiff(
      [...this.fileDiffs.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([, d]) => d)
        .join(""),
    );
  }
}

/** The command line a tool call runs: `rawInput.command` (a string or an argv array). */
export function commandOf(rawInput: unknown): string | undefined {
  const command = (rawInput as { command?: unknown } | null | undefined)?.command;
  if (typeof command === "string") return command;
  if (Array.isArray(command) && command.every((w) => typeof w === "string")) return command.join(" ");
  return undefined;
}

function cwdOf(rawInput: unknown): string | undefined {
  const cwd = (rawInput as { cwd?: unknown } | null | undefined)?.cwd;
  return typeof cwd === "string" ? cwd : undefined;
}

function exitCodeOf(rawOutput: unknown): number | null | undefined {
  const output = rawOutput as { exitCode?: unknown; exit_code?: unknown } | null | undefined;
  const code = output?.exitCode ?? output?.exit_code;
  return typeof code === "number" ? code : code === null ? null : undefined;
}

/** A command's output without the code fence agents wrap it in for display. */
function unfence(text: string): string {
  const fenced = /^```[^\n]*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return fenced ? fenced[1]! : text;
}

/** The text of a tool call's content blocks (code fences the agent added are kept). */
function contentText(content: acp.ToolCallContent[]): string {
  return content
    .map((c) => (c.type === "content" && c.content.type === "text" ? c.content.text : ""))
    .filter(Boolean)
    .join("\n");
}
