// The runtime's domain model: threads, turns and items. Faces map these to their own wire
// shapes; nothing here knows about JSON-RPC.

export type ThreadStatus = "active" | "paused" | "archived";
export type HistoryMode = "server" | "client";
export type AgentMode = "agent" | "plan";
export type TurnStatus = "running" | "completed" | "waitingApproval" | "failed" | "cancelled";
export type ItemStatus = "started" | "streaming" | "completed";

/** What happens to an approval nobody answers, and whether approvals are asked at all. */
export type ApprovalPolicy = "default" | "autoApprove" | "interrupt";
export type ApprovalType = "shell" | "file";
export type ApprovalDecision = "accept" | "acceptForSession" | "acceptAlways" | "decline" | "cancel";

/** Runs a thread's turns: the built-in engine or an external agent process. */
export type BackendSpec =
  | { type: "builtin" }
  | { type: "claude-code"; command?: string; args?: string[]; env?: Record<string, string> }
  | { type: "codex"; command?: string; args?: string[]; env?: Record<string, string> }
  | { type: "acp"; command: string; args?: string[]; env?: Record<string, string> };

/** An external agent's own session for a thread, kept so a restarted server resumes it. */
export type BackendSession = {
  /** The BackendSpec type that created it. */
  backend: BackendSpec["type"];
  sessionId: string;
};

export type ThreadConfiguration = {
  /** Who runs the turns; the server's default backend when absent. */
  backend?: BackendSpec;
  provider?: string;
  model?: string;
  /** default: ask, decline when unanswered; autoApprove: never ask; interrupt: ask, cancel the turn when unanswered. */
  approvalPolicy?: ApprovalPolicy;
  /** Approval types granted without asking (e.g. ["file"] for "accept edits"). */
  autoApproveTypes?: ApprovalType[];
  /** How long an approval request waits for a client before the policy decides. */
  approvalTimeoutMs?: number;
  systemPrompt?: string;
  /** Per-command timeout for the shell tool. */
  commandTimeoutMs?: number;
  /** The model's context window in tokens, overriding the model catalog (compaction uses it). */
  contextWindow?: number;
  /** Only these tools (by name) are offered to the built-in engine's model; all when absent. */
  tools?: string[];
  /** Tools a client provides: offered to the model, called through the clients following the thread. */
  dynamicTools?: DynamicToolSpec[];
};

export interface DynamicToolSpec {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
}

export type ThreadRuntimeState = {
  running: boolean;
  waitingOnApproval: boolean;
};

export type InputPart =
  | { type: "text"; text: string }
  | { type: "commandRef"; name: string; args?: string }
  | { type: "skillRef"; name: string }
  | { type: "fileRef"; path: string }
  | { type: "image"; url: string }
  | { type: "localImage"; path: string; mimeType?: string };

/** A history message supplied by the client in historyMode "client". */
export type ClientMessage = {
  role: "system" | "user" | "assistant";
  content: string;
};

export type QueuedInput = {
  id: string;
  input: InputPart[];
  createdAt: string;
};

export type Thread = {
  id: string;
  workspacePath: string;
  userId?: string;
  originChannel: string;
  channelContext?: string;
  displayName?: string;
  status: ThreadStatus;
  createdAt: string;
  lastActiveAt: string;
  historyMode: HistoryMode;
  mode: AgentMode;
  configuration?: ThreadConfiguration;
  metadata: Record<string, unknown>;
  queuedInputs: QueuedInput[];
  plan?: Plan;
  /** The external agent session this thread continues, when an external backend ran it. */
  backendSession?: BackendSession;
  /** Set when this thread was forked from another one. */
  forkedFrom?: { threadId: string; turnId?: string };
};

export type TokenUsage = {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cachedInputTokens?: number;
  reasoningTokens?: number;
  /** USD at the catalog's list prices; absent when the model's pricing is unknown. */
  costUsd?: number;
};

export type TurnError = {
  /** Machine-readable reason, e.g. "noProvider", "rateLimited", "serverRestarted". */
  code: string;
  message: string;
  httpStatus?: number;
};

export type Turn = {
  id: string;
  threadId: string;
  status: TurnStatus;
  startedAt: string;
  completedAt?: string;
  tokenUsage?: TokenUsage;
  error?: TurnError;
  /** Why a cancelled turn was cancelled ("interrupted", "approvalCancelled", ...). */
  cancelReason?: string;
  /** The unified diff of every file the turn changed, as last published. */
  diff?: string;
  input: InputPart[];
  model?: string;
  items?: Item[];
};

export type PlanStep = {
  step: string;
  status: "pending" | "in_progress" | "completed";
};

export type Plan = {
  explanation?: string;
  steps: PlanStep[];
  updatedAt: string;
  turnId?: string;
};

export type ItemPayloads = {
  userMessage: { text: string; input: InputPart[]; steered?: boolean };
  agentMessage: { text: string };
  reasoningContent: { text: string; signature?: string };
  /** mcpServer: the MCP server whose tool it is. */
  toolCall: { callId: string; toolName: string; argumentsText: string; arguments?: unknown; mcpServer?: string };
  toolResult: { callId: string; toolName: string; success: boolean; output: string };
  /** A tool a client provides (configuration.dynamicTools), called through it: call and result in one item. */
  dynamicToolCall: {
    callId: string;
    toolName: string;
    argumentsText: string;
    arguments?: unknown;
    output?: string;
    success?: boolean;
  };
  /** A plugin's function called: the call and, once it ran, its result, in one item (no toolCall/toolResult). */
  pluginFunctionCall: {
    callId: string;
    toolName: string;
    pluginId: string;
    functionName: string;
    argumentsText: string;
    arguments?: unknown;
    output?: string;
    success?: boolean;
  };
  commandExecution: {
    callId: string;
    command: string;
    cwd: string;
    output: string;
    exitCode?: number | null;
    timedOut?: boolean;
    interrupted?: boolean;
  };
  toolExecution: { callId: string; toolName: string; success?: boolean };
  fileChange: { callId: string; path: string; kind: "add" | "update"; diff: string };
  approvalRequest: {
    requestId: string;
    callId: string;
    approvalType: ApprovalType;
    operation: string;
    target: string;
    scopeKey: string;
    reason: string;
    decision?: ApprovalDecision;
  };
  approvalResponse: { requestId: string; decision: ApprovalDecision; source: ApprovalSource };
  error: { code: string; message: string };
  /**
   * kind "compaction" also carries the summary that replaces the conversation up to and
   * including item `coversThroughItemId`, and the covered user request kept verbatim.
   */
  systemNotice: { kind: string; message: string; summary?: string; coversThroughItemId?: string; keptUserItemId?: string };
};

export type ItemType = keyof ItemPayloads;

/**
 * Where an approval decision came from: a client's answer, an `acceptForSession` grant of the
 * thread (`sessionGrant`), a persisted `acceptAlways` rule (`rule`), the policy, or a timeout.
 * `session` and `always` are what older logs recorded for the grant and the rule; they stay
 * readable.
 */
export type ApprovalSource = "client" | "sessionGrant" | "rule" | "policy" | "timeout" | "session" | "always";

export type ItemOf<T extends ItemType> = {
  id: string;
  threadId: string;
  turnId: string;
  type: T;
  status: ItemStatus;
  createdAt: string;
  completedAt?: string;
  payload: ItemPayloads[T];
};

export type Item = { [T in ItemType]: ItemOf<T> }[ItemType];
