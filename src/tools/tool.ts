// The tool interface. Tools are plain objects in a registry; the engine validates arguments,
// runs the approval gate, and calls execute().
import type { z } from "zod";
import type { ApprovalType, PlanStep } from "../domain/model.js";
import type { Workspace } from "./workspace.js";

export interface ApprovalAsk {
  approvalType: ApprovalType;
  /** What will be done, e.g. the shell command or "write src/a.ts". */
  operation: string;
  /** What it is done to: the working directory or the file's absolute path. */
  target: string;
  /** Key under which "accept for session" / "accept always" decisions are remembered. */
  scopeKey: string;
  reason: string;
}

/**
 * Where a thread's tools read and write files and run commands instead of going to the disk
 * and a local shell directly, e.g. a client editor that sees unsaved buffers and shows commands
 * in its own terminal. Every capability is optional; paths are absolute and already confined
 * to the workspace. A failed read falls back to the disk; writes and commands report failures.
 */
export interface ToolEnvironment {
  readTextFile?(absolutePath: string): Promise<string>;
  writeTextFile?(absolutePath: string, content: string): Promise<void>;
  runCommand?(request: CommandRequest): Promise<CommandResult>;
}

export interface CommandRequest {
  /** The tool call that runs the command. */
  callId: string;
  /** A bash command line. */
  command: string;
  cwd: string;
  timeoutMs: number;
  /** Aborted when the turn is interrupted: the command is to be killed. */
  signal: AbortSignal;
}

export interface CommandResult {
  /** Combined stdout and stderr. */
  output: string;
  exitCode: number | null;
  signal?: string | null;
  timedOut?: boolean;
  interrupted?: boolean;
}

/** A question a tool puts to the person following the thread (the ask_user tool). */
export interface UserQuestion {
  prompt: string;
  /** Offered answers; empty for a free answer. */
  choices: string[];
  multiSelect: boolean;
}

export interface ToolContext {
  workspace: Workspace;
  /** The thread the tool runs for. */
  threadId?: string;
  /** The tool call being executed. */
  callId: string;
  /** The thread's file system and command runner, when not the disk and a local shell. */
  environment?: ToolEnvironment;
  signal: AbortSignal;
  /** Streams command output (shell tools). */
  emitOutput(chunk: string, stream: "stdout" | "stderr"): void;
  /** Records a file change so the engine can publish the turn's diff. */
  recordFileChange(change: { path: string; before: string | null; after: string }): void;
  /** Replaces the thread's plan (planning tool). */
  updatePlan(plan: { explanation?: string; steps: PlanStep[] }): void;
  commandTimeoutMs: number;
  /** Asks the person following the thread; undefined when no client can answer questions. */
  ask?(question: UserQuestion): Promise<string | undefined>;
  /** Calls a tool a client provides, through the clients following the thread; undefined: none can. */
  callClientTool?(call: ClientToolCall): Promise<ClientToolResult | undefined>;
}

/** A call of a tool a client provides. */
export interface ClientToolCall {
  callId: string;
  tool: string;
  arguments: unknown;
}

export interface ClientToolResult {
  output: string;
  success: boolean;
}

export interface ToolResult {
  output: string;
  isError?: boolean;
  /** Set by shell tools. */
  exitCode?: number | null;
  timedOut?: boolean;
  interrupted?: boolean;
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: S;
  /** "shell" tools get a commandExecution item; "readOnly" tools stay available in plan mode. */
  kind: "readOnly" | "write" | "shell" | "plan";
  /** The JSON Schema the model is given, when not the one `input` makes (tools of MCP servers). */
  parameters?: Record<string, unknown>;
  /** The MCP server a tool belongs to; its items name it. */
  mcpServer?: string;
  /** The plugin a tool is a function of: its calls are pluginFunctionCall items. */
  plugin?: { id: string; functionName: string };
  /** A tool a client provides: its calls are dynamicToolCall items. */
  dynamic?: boolean;
  /** Returns what to ask the user before running, or null when no approval is needed. */
  approval?(input: z.infer<S>, ctx: { workspace: Workspace }): ApprovalAsk | null;
  execute(input: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
}

// Lets a registry hold tools with different input schemas.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any>;

/**
 * The name of a tool of something else (an MCP server, a plugin): `<kind>__<owner>__<name>`, in
 * what the model APIs accept ([A-Za-z0-9_-], at most 64 characters).
 */
export function namespacedToolName(kind: string, owner: string, name: string): string {
  const clean = (s: string): string => s.replace(/[^A-Za-z0-9_-]/g, "_");
  return `${kind}__${clean(owner)}__${clean(name)}`.slice(0, 64);
}

export function defineTool<S extends z.ZodType>(tool: Tool<S>): AnyTool {
  return tool as AnyTool;
}
