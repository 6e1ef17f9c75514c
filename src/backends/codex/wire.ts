// The part of `codex app-server`'s v2 JSON-RPC this backend uses (learned from codex 0.169.0's
// `app-server generate-json-schema`/`generate-ts`). Codex leaves "jsonrpc" out of its messages.
// Schemas are lenient: only the fields read here, and unknown members are ignored, so newer
// codex versions that add fields keep working.
import { z } from "zod";

// ---- what we send -----------------------------------------------------------------------------

/** Codex's approval policies; "untrusted" asks before any command that is not known to be safe, and before every patch. */
export type AskForApproval = "untrusted" | "on-request" | "never";
export type SandboxMode = "read-only" | "workspace-write" | "danger-full-access";

export interface InitializeParams {
  clientInfo: { name: string; title: string | null; version: string };
  capabilities: null;
}

export interface ThreadStartParams {
  cwd: string;
  model?: string;
  approvalPolicy: AskForApproval;
  sandbox: SandboxMode;
}

export interface ThreadResumeParams extends ThreadStartParams {
  threadId: string;
  excludeTurns?: boolean;
}

export type UserInput =
  { type: "text"; text: string; text_elements: [] } | { type: "image"; url: string } | { type: "localImage"; path: string };

export interface TurnStartParams {
  threadId: string;
  input: UserInput[];
  model?: string;
}

export interface TurnInterruptParams {
  threadId: string;
  turnId: string;
}

/** v2 decisions for item/commandExecution/requestApproval and item/fileChange/requestApproval. */
export type ApprovalDecisionV2 = "accept" | "acceptForSession" | "decline" | "cancel";
/** Decisions of the legacy execCommandApproval / applyPatchApproval requests. */
export type ReviewDecision = "approved" | "approved_for_session" | { denied: { rejection: string } } | "abort";

// ---- what codex answers and sends -------------------------------------------------------------

export const ThreadResponse = z.object({ thread: z.object({ id: z.string() }) });
export const TurnStartResponse = z.object({ turn: z.object({ id: z.string() }) });

const text = z.string().nullish();

export const PatchChangeKind = z.object({ type: z.enum(["add", "delete", "update"]).or(z.string()), move_path: z.string().nullish() });
export const FileUpdateChange = z.object({ path: z.string(), kind: PatchChangeKind, diff: z.string().default("") });
export type FileUpdateChange = z.infer<typeof FileUpdateChange>;

/** A thread item; `type` picks which of the optional fields are set. */
export const ThreadItem = z.object({
  type: z.string(),
  id: z.string(),
  // agentMessage, plan
  text,
  // reasoning
  summary: z.array(z.string()).nullish(),
  content: z.unknown().optional(),
  // commandExecution
  command: text,
  cwd: text,
  aggregatedOutput: text,
  exitCode: z.number().nullish(),
  status: text,
  // fileChange
  changes: z.array(FileUpdateChange).nullish(),
  // mcpToolCall, dynamicToolCall
  server: text,
  tool: text,
  arguments: z.unknown().optional(),
  result: z.unknown().optional(),
  error: z.object({ message: z.string() }).nullish(),
  success: z.boolean().nullish(),
  contentItems: z.unknown().optional(),
  // webSearch
  query: text,
});
export type ThreadItem = z.infer<typeof ThreadItem>;

export const ItemNotification = z.object({ threadId: z.string(), turnId: z.string(), item: ThreadItem });
export const DeltaNotification = z.object({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  delta: z.string(),
  summaryIndex: z.number().optional(),
  contentIndex: z.number().optional(),
});
export const SummaryPartAdded = z.object({ turnId: z.string(), itemId: z.string(), summaryIndex: z.number() });

export const TurnError = z.object({ message: z.string(), additionalDetails: z.string().nullish() });
export const TurnCompleted = z.object({
  threadId: z.string(),
  turn: z.object({ id: z.string(), status: z.string(), error: TurnError.nullish() }),
});
export const TurnDiffUpdated = z.object({ threadId: z.string(), turnId: z.string(), diff: z.string() });
export const TurnPlanUpdated = z.object({
  threadId: z.string(),
  turnId: z.string(),
  explanation: z.string().nullish(),
  plan: z.array(z.object({ step: z.string(), status: z.string() })),
});

export const TokenUsageBreakdown = z.object({
  totalTokens: z.number(),
  inputTokens: z.number(),
  cachedInputTokens: z.number().default(0),
  outputTokens: z.number(),
  reasoningOutputTokens: z.number().default(0),
});
export type TokenUsageBreakdown = z.infer<typeof TokenUsageBreakdown>;
export const TokenUsageUpdated = z.object({
  threadId: z.string(),
  turnId: z.string(),
  tokenUsage: z.object({ total: TokenUsageBreakdown, last: TokenUsageBreakdown }),
});

export const ErrorNotification = z.object({ error: TurnError, willRetry: z.boolean().default(false), turnId: z.string().optional() });

// ---- codex's requests to us (approvals) --------------------------------------------------------

export const CommandApprovalParams = z.object({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  approvalId: text,
  reason: text,
  command: text,
  cwd: text,
});
export const FileChangeApprovalParams = z.object({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  reason: text,
  grantRoot: text,
});
/** Legacy (v1) exec approval. */
export const ExecCommandApprovalParams = z.object({
  callId: z.string(),
  command: z.array(z.string()),
  cwd: z.string(),
  reason: text,
});
/** Legacy (v1) patch approval. */
export const ApplyPatchApprovalParams = z.object({
  callId: z.string(),
  fileChanges: z.record(z.string(), z.object({ type: z.string() }).loose()),
  reason: text,
});

export const METHODS = {
  initialize: "initialize",
  initialized: "initialized",
  threadStart: "thread/start",
  threadResume: "thread/resume",
  turnStart: "turn/start",
  turnInterrupt: "turn/interrupt",
} as const;
