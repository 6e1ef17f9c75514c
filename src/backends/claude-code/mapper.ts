// Claude Code's stream-json messages → Switchyard items, for one turn. No I/O: the session feeds
// it every message it reads, and it records items, plan and diff through its host.
import path from "node:path";
import type { ItemOf, PlanStep, TokenUsage, TurnError } from "../../domain/model.js";
import type { TurnRecorder } from "../../domain/turn-recorder.js";
import type { ApprovalAsk } from "../../tools/tool.js";
import type { Workspace } from "../../tools/workspace.js";
import { TurnChanges, fileDiff } from "../../tools/diff.js";
import { BACKEND_ERRORS } from "../backend.js";
import { isObject, type CliMessage, type ContentBlock, type ControlRequest, type StreamEvent } from "./wire.js";

export interface MapperHost {
  readonly recorder: TurnRecorder;
  readonly workspace: Workspace;
  /** The workspace as the thread names it (the agent may report paths under it rather than under the real path). */
  readonly workspacePath: string;
  reportPlan(plan: { explanation?: string; steps: PlanStep[] }): void;
  reportDiff(diff: string): void;
}

type ResultMessage = Extract<CliMessage, { type: "result" }>;
type Block =
  | { kind: "text"; item: ItemOf<"agentMessage">; done: boolean }
  | { kind: "thinking"; item: ItemOf<"reasoningContent">; done: boolean }
  | { kind: "tool"; item: ItemOf<"toolCall">; callId: string; done: boolean };

export const FILE_TOOLS = new Set(["Edit", "Write", "MultiEdit", "NotebookEdit"]);

export class TurnMapper {
  /** Blocks of the assistant message being streamed, by content block index. */
  private streamed = new Map<number, Block>();
  /** Tool calls seen this turn, for naming their results. */
  private readonly calls = new Map<string, { name: string; input: Record<string, unknown> }>();
  private readonly denied = new Set<string>();
  private readonly changes = new TurnChanges();

  constructor(private readonly host: MapperHost) {}

  /** A tool call the user declined: its result gets no commandExecution or fileChange. */
  markDenied(callId: string): void {
    this.denied.add(callId);
  }

  handle(message: CliMessage): void {
    switch (message.type) {
      case "stream_event":
        if ("event" in message && isObject(message.event) && !message.parent_tool_use_id) this.onStreamEvent(message.event);
        break;
      case "assistant":
        if ("message" in message && isObject(message.message) && Array.isArray(message.message.content)) {
          const fromSubagent = !!(message as { parent_tool_use_id?: unknown }).parent_tool_use_id;
          for (const block of message.message.content as ContentBlock[]) this.onAssistantBlock(block, fromSubagent);
        }
        break;
      case "user":
        if ("message" in message && isObject(message.message) && Array.isArray(message.message.content)) {
          const user = message as Extract<CliMessage, { type: "user" }>;
          for (const block of user.message.content as ContentBlock[]) {
            if (isObject(block) && block.type === "tool_result") this.onToolResult(block, user);
          }
        }
        break;
    }
  }

  /** Completes whatever is still open (the turn ended mid-stream). */
  finish(): void {
    this.host.recorder.closeOpen();
    this.streamed.clear();
  }

  private onStreamEvent(event: StreamEvent): void {
    const { recorder } = this.host;
    switch (event.type) {
      case "message_start":
        this.streamed = new Map();
        break;
      case "content_block_start": {
        const e = event as Extract<StreamEvent, { type: "content_block_start" }>;
        const block = e.content_block;
        if (block?.type === "text")
          this.streamed.set(e.index, { kind: "text", item: recorder.start("agentMessage", { text: "" }), done: false });
        else if (block?.type === "thinking")
          this.streamed.set(e.index, { kind: "thinking", item: recorder.start("reasoningContent", { text: "" }), done: false });
        else if (block?.type === "tool_use" && typeof block.id === "string") {
          const item = recorder.start("toolCall", { callId: block.id, toolName: String(block.name ?? ""), argumentsText: "" });
          this.streamed.set(e.index, { kind: "tool", item, callId: block.id, done: false });
        }
        break;
      }
      case "content_block_delta": {
        const e = event as Extract<StreamEvent, { type: "content_block_delta" }>;
        const open = this.streamed.get(e.index);
        if (!open || open.done || !isObject(e.delta)) break;
        const delta = e.delta as Record<string, unknown>;
        if (open.kind === "text" && typeof delta.text === "string") {
          recorder.appendText(open.item, "agentMessage", delta.text);
        } else if (open.kind === "thinking" && typeof delta.thinking === "string") {
          recorder.appendText(open.item, "reasoning", delta.thinking);
        } else if (open.kind === "thinking" && typeof delta.signature === "string") {
          open.item.payload.signature = delta.signature;
        } else if (open.kind === "tool" && typeof delta.partial_json === "string" && delta.partial_json) {
          open.item.payload.argumentsText += delta.partial_json;
          recorder.delta(open.item, "toolArguments", delta.partial_json);
        }
        break;
      }
      case "content_block_stop": {
        // The complete block usually came already (as an assistant message); if not, what
        // streamed is final, and the assistant message that may follow is matched to it.
        const open = this.streamed.get((event as { index: number }).index);
        if (open && !open.done) {
          open.done = true;
          if (open.kind === "tool") this.host.recorder.complete(open.item, { arguments: parseJson(open.item.payload.argumentsText) });
          else this.host.recorder.complete(open.item);
        }
        break;
      }
    }
  }

  /** The streamed block an assistant message's block completes, taken out of the open set. */
  private takeStreamed(kind: Block["kind"], callId?: string): Block | undefined {
    for (const [index, block] of this.streamed) {
      if (block.kind !== kind || (callId !== undefined && block.kind === "tool" && block.callId !== callId)) continue;
      this.streamed.delete(index);
      return block;
    }
    return undefined;
  }

  private onAssistantBlock(block: ContentBlock, fromSubagent: boolean): void {
    if (!isObject(block)) return;
    const { recorder } = this.host;
    if (block.type === "text" && !fromSubagent) {
      const open = this.takeStreamed("text");
      if (open?.kind === "text") {
        if (!open.done) recorder.complete(open.item, { text: block.text });
      } else if (block.text) recorder.record("agentMessage", { text: block.text });
    } else if (block.type === "thinking" && !fromSubagent) {
      const signature = block.signature ? { signature: block.signature } : {};
      const open = this.takeStreamed("thinking");
      if (open?.kind === "thinking") {
        if (!open.done) recorder.complete(open.item, { text: block.thinking, ...signature });
      } else if (block.thinking) recorder.record("reasoningContent", { text: block.thinking, ...signature });
    } else if (block.type === "tool_use") {
      const input = isObject(block.input) ? block.input : {};
      this.calls.set(block.id, { name: block.name, input });
      const argumentsText = JSON.stringify(input);
      const open = this.takeStreamed("tool", block.id);
      if (open?.kind === "tool") {
        if (!open.done) recorder.complete(open.item, { argumentsText, arguments: input });
      } else recorder.record("toolCall", { callId: block.id, toolName: block.name, argumentsText, arguments: input });
    }
  }

  private onToolResult(block: Extract<ContentBlock, { type: "tool_result" }>, message: Extract<CliMessage, { type: "user" }>): void {
    const { recorder } = this.host;
    const callId = block.tool_use_id;
    const call = this.calls.get(callId);
    const toolName = call?.name ?? "";
    const output = resultText(block.content);
    const success = block.is_error !== true;
    const ran = !this.denied.has(callId) && !message.tool_result_meta?.some((m) => m.id === callId && m.non_execution_kind);
    const structured = message.tool_use_result;
    if (call && ran) {
      if (toolName === "Bash") this.recordCommand(callId, call.input, output, success, structured);
      else if (FILE_TOOLS.has(toolName) && success) this.recordFileChange(callId, toolName, call.input, structured);
      else if (toolName === "TodoWrite" && success) this.reportTodos(call.input);
    }
    recorder.record("toolResult", { callId, toolName, success, output });
  }

  private recordCommand(callId: string, input: Record<string, unknown>, text: string, success: boolean, structured: unknown): void {
    const { recorder } = this.host;
    const item = recorder.start("commandExecution", {
      callId,
      command: String(input.command ?? ""),
      cwd: this.host.workspace.root,
      output: "",
    });
    const out = isObject(structured) && typeof structured.stdout === "string" ? structured.stdout : undefined;
    const err = isObject(structured) && typeof structured.stderr === "string" ? structured.stderr : "";
    const chunks: Array<[string, "stdout" | "stderr"]> =
      out !== undefined
        ? [
            [out, "stdout"],
            [err, "stderr"],
          ]
        : [[text, "stdout"]];
    for (const [chunk, stream] of chunks) {
      if (!chunk) continue;
      const piece = item.payload.output && !item.payload.output.endsWith("\n") ? `\n${chunk}` : chunk;
      item.payload.output += piece;
      recorder.delta(item, "commandOutput", piece, stream);
    }
    const exit = /^Exit code (\d+)/.exec(text);
    const interrupted = isObject(structured) && structured.interrupted === true;
    recorder.complete(item, {
      exitCode: exit ? Number(exit[1]) : success ? 0 : null,
      ...(interrupted ? { interrupted: true } : {}),
    });
  }

  private recordFileChange(callId: string, toolName: string, input: Record<string, unknown>, structured: unknown): void {
    const change = fileChangeOf(toolName, input, structured);
    if (!change) return;
    const absolute = path.resolve(this.host.workspace.root, change.path);
    const rel = this.relative(absolute);
    const kind = change.before === null ? "add" : "update";
    // Unknown content (a notebook, an older CLI without the original file) leaves the diff empty.
    const diff = change.after === undefined || change.before === undefined ? "" : fileDiff(rel, change.before, change.after);
    this.host.recorder.record("fileChange", { callId, path: rel, kind, diff });
    if (change.after !== undefined && change.before !== undefined && !change.partial) {
      this.changes.record({ path: path.resolve(this.host.workspace.root, rel), before: change.before, after: change.after });
      this.host.reportDiff(this.changes.unifiedDiff(this.host.workspace));
    }
  }

  private reportTodos(input: Record<string, unknown>): void {
    if (!Array.isArray(input.todos)) return;
    const steps: PlanStep[] = input.todos.filter(isObject).map((todo) => ({
      step: String(todo.content ?? ""),
      status: todo.status === "completed" || todo.status === "in_progress" ? todo.status : "pending",
    }));
    this.host.reportPlan({ steps });
  }

  /** A path relative to the workspace (either spelling of its root), or absolute when outside it. */
  private relative(absolute: string): string {
    for (const root of [this.host.workspace.root, path.resolve(this.host.workspacePath)]) {
      const rel = path.relative(root, absolute);
      if (rel === "") return ".";
      if (!rel.startsWith("..") && !path.isAbsolute(rel)) return rel.split(path.sep).join("/");
    }
    return absolute;
  }
}

export interface FileEdit {
  path: string;
  before: string | null | undefined;
  after: string | undefined;
  /** before/after are only the replaced text, not the whole file. */
  partial?: boolean;
}

/**
 * What a file tool did: the path, the content before (null: created; undefined: unknown) and
 * after (undefined: unknown). Claude Code's structured result carries the original file.
 */
export function fileChangeOf(toolName: string, input: Record<string, unknown>, structured: unknown): FileEdit | undefined {
  const file =
    typeof input.file_path === "string" ? input.file_path : typeof input.notebook_path === "string" ? input.notebook_path : undefined;
  if (!file) return undefined;
  const result = isObject(structured) ? structured : {};
  const original = "originalFile" in result ? result.originalFile : undefined;
  let before: string | null | undefined = typeof original === "string" || original === null ? original : undefined;
  if (before === undefined && result.type === "create") before = null;
  if (toolName === "Write") return { path: file, before, after: typeof input.content === "string" ? input.content : undefined };
  const edits = toolName === "MultiEdit" && Array.isArray(input.edits) ? input.edits.filter(isObject) : toolName === "Edit" ? [input] : [];
  if (edits.length === 0) return { path: file, before, after: undefined };
  if (typeof before !== "string") {
    // Without the original file only the replaced text is known: diff that.
    const old = edits.map((e) => String(e.old_string ?? "")).join("\n");
    const now = edits.map((e) => String(e.new_string ?? "")).join("\n");
    return { path: file, before: old, after: now, partial: true };
  }
  let after = before;
  for (const edit of edits)
    after = replaceText(after, String(edit.old_string ?? ""), String(edit.new_string ?? ""), edit.replace_all === true);
  return { path: file, before, after };
}

function replaceText(text: string, from: string, to: string, all: boolean): string {
  if (!from) return text;
  if (all) return text.split(from).join(to);
  const at = text.indexOf(from);
  return at < 0 ? text : text.slice(0, at) + to + text.slice(at + from.length);
}

/** A tool result's content as text. */
export function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter(isObject)
    .map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : `[${String(part.type)}]`))
    .join("\n");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text || "{}");
  } catch {
    return undefined;
  }
}

// ---- result ---------------------------------------------------------------------------------

/**
 * The turn's cost: the per-result model usage when the CLI reports it, else the growth of the
 * session's running total since the previous result (unknown for the first result of a resumed
 * session, whose total includes the cost of its earlier life).
 */
export function turnCost(result: ResultMessage, previousTotal: number | undefined): number | undefined {
  const since = result.model_usage_since_last_result;
  if (isObject(since)) {
    return Object.values(since).reduce<number>(
      (sum, usage) => sum + (isObject(usage) && typeof usage.costUSD === "number" ? usage.costUSD : 0),
      0,
    );
  }
  if (typeof result.total_cost_usd !== "number" || previousTotal === undefined) return undefined;
  return Math.max(0, result.total_cost_usd - previousTotal);
}

/** The turn's token usage (the result's `usage` is the turn's own, not the session's). */
export function resultUsage(result: ResultMessage, costUsd: number | undefined): TokenUsage | undefined {
  const usage = result.usage;
  if (!isObject(usage)) return undefined;
  const n = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0);
  const cacheRead = n(usage.cache_read_input_tokens);
  const inputTokens = n(usage.input_tokens) + cacheRead + n(usage.cache_creation_input_tokens);
  const outputTokens = n(usage.output_tokens);
  const thinking = isObject(usage.output_tokens_details) ? n(usage.output_tokens_details.thinking_tokens) : 0;
  return {
    inputTokens,
    outputTokens,
    totalTokens: inputTokens + outputTokens,
    cachedInputTokens: cacheRead,
    ...(thinking > 0 ? { reasoningTokens: thinking } : {}),
    ...(costUsd !== undefined ? { costUsd: Math.round(costUsd * 1e10) / 1e10 } : {}),
  };
}

/** The error a result reports, or undefined when the turn succeeded. */
export function resultError(result: ResultMessage): TurnError | undefined {
  if (result.subtype === "success" && result.is_error !== true) return undefined;
  const details = [typeof result.result === "string" ? result.result : "", ...(Array.isArray(result.errors) ? result.errors : [])].filter(
    Boolean,
  );
  const message = details.length > 0 ? details.join("\n") : `Claude Code ended the turn with "${result.subtype}".`;
  return { code: BACKEND_ERRORS.agent, message };
}

// ---- approvals ------------------------------------------------------------------------------

type CanUseTool = Extract<ControlRequest["request"], { subtype: "can_use_tool" }>;

/**
 * The approval question for a `can_use_tool` request: Bash is a shell approval, the file tools
 * a file approval; other tools (web fetch, MCP tools, ...) are asked as a "shell" approval
 * naming the tool, since those are the approval types clients know.
 */
export function permissionAsk(request: CanUseTool, workspace: Workspace): ApprovalAsk {
  const input = isObject(request.input) ? request.input : {};
  if (request.tool_name === "Bash") {
    const command = String(input.command ?? "");
    return {
      approvalType: "shell",
      operation: command,
      target: workspace.root,
      scopeKey: `shell:${command.trim()}`,
      reason: request.description
        ? `Claude Code wants to run a shell command: ${request.description}`
        : "Claude Code wants to run a shell command.",
    };
  }
  const file =
    typeof input.file_path === "string" ? input.file_path : typeof input.notebook_path === "string" ? input.notebook_path : undefined;
  if (FILE_TOOLS.has(request.tool_name) && file) {
    const target = path.resolve(workspace.root, file);
    const rel = workspace.contains(target) ? workspace.relative(target) : target;
    const verb = request.tool_name === "Write" ? "write" : "edit";
    return {
      approvalType: "file",
      operation: `${verb} ${rel}`,
      target,
      scopeKey: `file:${rel}`,
      reason: "Claude Code wants to write a file.",
    };
  }
  const args = JSON.stringify(input);
  return {
    approvalType: "shell",
    operation: `${request.tool_name} ${args.length > 500 ? `${args.slice(0, 500)}…` : args}`,
    target: workspace.root,
    scopeKey: `tool:${request.tool_name}:${args}`,
    reason: request.description ?? request.decision_reason ?? `Claude Code wants to use ${request.tool_name}.`,
  };
}
