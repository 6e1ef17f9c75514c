// AppServer protocol: the whole surface in one table — every client request (params and
// result), every notification, every server -> client request, and the objects they carry.
// The server validates requests with these params schemas; the exported JSON Schema, the
// TypeScript declarations and the typed client are all generated from this table.
import { z } from "zod";
import type { ItemPayloads } from "../../domain/model.js";
import type { Same } from "../../domain/same-type.js";
import type { ProtocolTable } from "../../rpc/protocol-table.js";
import { BackendSpecSchema } from "../../domain/backend-spec-schema.js";
import {
  CommandInfo,
  CronJobInfo,
  ExternalChannelConfig,
  PluginInfo,
  SubAgentProfileEntry,
  ManagementNotifications,
  ManagementRequests,
  McpServerConfig,
  McpServerStatus,
  SkillInfo,
} from "./management-protocol.js";

// ---- params of every client -> server request, and what they carry ----
const threadId = z.string().min(1).describe("Thread id.");

export const InputPart = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("commandRef"), name: z.string(), args: z.string().optional() }),
  z.object({ type: z.literal("skillRef"), name: z.string() }),
  z.object({ type: z.literal("fileRef"), path: z.string() }),
  z.object({ type: z.literal("image"), url: z.string() }),
  z.object({ type: z.literal("localImage"), path: z.string(), mimeType: z.string().optional() }),
]);

const Input = z.array(InputPart).min(1, "input must contain at least one item");

export const ClientCapabilities = z
  .object({
    approvalSupport: z.boolean().optional(),
    streamingSupport: z.boolean().optional(),
    commandExecutionStreaming: z.boolean().optional(),
    toolExecutionLifecycle: z.boolean().optional(),
    configChange: z.boolean().optional(),
    optOutNotificationMethods: z.array(z.string()).optional(),
  })
  .passthrough();
export type ClientCapabilities = z.infer<typeof ClientCapabilities>;

export const ApprovalPolicy = z.enum(["default", "autoApprove", "interrupt"]);

export const ThreadConfiguration = z
  .object({
    backend: BackendSpecSchema.optional().describe("Who runs the thread's turns: the built-in engine or an external agent."),
    provider: z.string().optional(),
    model: z.string().optional(),
    approvalPolicy: ApprovalPolicy.optional(),
    autoApproveTypes: z.array(z.enum(["shell", "file"])).optional(),
    approvalTimeoutMs: z.number().int().positive().optional(),
    systemPrompt: z.string().optional(),
    commandTimeoutMs: z.number().int().positive().optional(),
    contextWindow: z.number().int().positive().optional(),
    tools: z.array(z.string()).optional().describe("Only these tools (by name) are offered to the model; all when absent."),
    dynamicTools: z
      .array(
        z.object({
          name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, _ and -, at most 64"),
          description: z.string().optional(),
          inputSchema: z.record(z.string(), z.unknown()).optional(),
        }),
      )
      .optional()
      .describe(
        "Tools this client provides: offered to the model; each call is sent to the clients following the thread as item/tool/call.",
      ),
  })
  .strict();

const Identity = z.object({
  channelName: z.string().min(1).optional(),
  userId: z.string().optional(),
  channelContext: z.string().optional(),
  workspacePath: z.string().min(1).optional(),
});

export const AppServerParams = {
  initialize: z.object({
    clientInfo: z.object({ name: z.string(), title: z.string().optional(), version: z.string().optional() }).passthrough(),
    capabilities: ClientCapabilities.optional(),
  }),
  "thread/start": z.object({
    identity: Identity.optional(),
    historyMode: z.enum(["server", "client"]).optional(),
    displayName: z.string().optional(),
    configuration: ThreadConfiguration.optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
  "thread/resume": z.object({ threadId }),
  "thread/list": z.object({
    identity: Identity.optional(),
    status: z
      .enum(["active", "paused", "archived"])
      .optional()
      .describe('Only threads with this status; "archived" lists archived threads.'),
    includeArchived: z.boolean().optional().describe("Also list archived threads (left out by default)."),
    cursor: z.string().optional(),
    limit: z.number().int().min(1).max(500).optional(),
  }),
  "thread/read": z.object({ threadId, includeTurns: z.boolean().optional() }),
  "thread/subscribe": z.object({
    threadId,
    afterSeq: z.number().int().min(0).optional().describe("Replay every event after this sequence number before going live."),
  }),
  "thread/unsubscribe": z.object({ threadId }),
  "thread/rename": z.object({ threadId, displayName: z.string() }),
  "thread/delete": z.object({ threadId }),
  "thread/pause": z.object({ threadId }),
  "thread/unpause": z.object({ threadId }),
  "thread/archive": z.object({ threadId }),
  "thread/unarchive": z.object({ threadId }),
  "thread/config/update": z.object({ threadId, configuration: ThreadConfiguration }),
  "thread/mode/set": z.object({ threadId, mode: z.enum(["agent", "plan"]) }),
  "turn/start": z.object({
    threadId,
    input: Input,
    messages: z.array(z.object({ role: z.enum(["system", "user", "assistant"]), content: z.string() })).optional(),
    model: z.string().optional(),
    provider: z.string().optional(),
  }),
  "turn/enqueue": z.object({ threadId, input: Input }),
  "turn/steer": z.object({ threadId, input: Input, expectedTurnId: z.string().optional() }),
  "turn/queue/remove": z.object({ threadId, queuedInputId: z.string() }),
  "turn/interrupt": z.object({ threadId, turnId: z.string().optional() }),
  "model/list": z.object({ provider: z.string().optional().describe("Only this provider's models.") }),
  "backend/list": z.object({}),
} as const;

export const ApprovalDecision = z.enum(["accept", "acceptForSession", "acceptAlways", "decline", "cancel"]);

/** The client's answer to item/approval/request. */
export const ApprovalAnswer = z.object({
  decision: ApprovalDecision,
});

// ---- results, notifications and the objects they carry ----

const iso = z.string().describe("ISO 8601 timestamp.");
const seq = z.number().int().describe("Position of the event in the server's log; resubscribe with afterSeq to catch up.");

export const TokenUsage = z
  .object({
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    totalTokens: z.number().int(),
    cachedInputTokens: z.number().int().optional(),
    reasoningTokens: z.number().int().optional(),
    costUsd: z.number().optional().describe("USD at list prices; absent when the model's pricing is unknown."),
  })
  .passthrough();

export const TurnError = z.object({ code: z.string(), message: z.string(), httpStatus: z.number().int().optional() }).passthrough();

const ApprovalSource = z
  .enum(["client", "sessionGrant", "rule", "policy", "timeout", "session", "always"])
  .describe(
    "Who decided: a client, an acceptForSession grant (sessionGrant), an acceptAlways rule (rule), the policy, or a timeout. session and always are what older servers recorded for the grant and the rule.",
  );
const ApprovalType = z.enum(["shell", "file"]);

/** What an approval asks: the approvalRequest item and the item/approval/request server request both carry it. */
const ApprovalQuestion = z.object({
  requestId: z.string(),
  callId: z.string(),
  approvalType: ApprovalType,
  operation: z.string(),
  target: z.string(),
  scopeKey: z.string(),
  reason: z.string(),
});

const payloads = {
  userMessage: z.object({ text: z.string(), input: z.array(InputPart), steered: z.boolean().optional() }),
  agentMessage: z.object({ text: z.string() }),
  reasoningContent: z.object({ text: z.string(), signature: z.string().optional() }),
  toolCall: z.object({
    callId: z.string(),
    toolName: z.string(),
    argumentsText: z.string(),
    arguments: z.unknown().optional(),
    mcpServer: z.string().optional().describe("The MCP server whose tool it is."),
  }),
  toolResult: z.object({ callId: z.string(), toolName: z.string(), success: z.boolean(), output: z.string() }),
  dynamicToolCall: z.object({
    callId: z.string(),
    toolName: z.string(),
    argumentsText: z.string(),
    arguments: z.unknown().optional(),
    output: z.string().optional().describe("Once the client answered."),
    success: z.boolean().optional(),
  }),
  pluginFunctionCall: z.object({
    callId: z.string(),
    toolName: z.string(),
    pluginId: z.string(),
    functionName: z.string(),
    argumentsText: z.string(),
    arguments: z.unknown().optional(),
    output: z.string().optional().describe("Once it ran."),
    success: z.boolean().optional(),
  }),
  commandExecution: z.object({
    callId: z.string(),
    command: z.string(),
    cwd: z.string(),
    output: z.string(),
    exitCode: z.number().int().nullable().optional(),
    timedOut: z.boolean().optional(),
    interrupted: z.boolean().optional(),
  }),
  toolExecution: z.object({ callId: z.string(), toolName: z.string(), success: z.boolean().optional() }),
  fileChange: z.object({ callId: z.string(), path: z.string(), kind: z.enum(["add", "update"]), diff: z.string() }),
  approvalRequest: ApprovalQuestion.extend({ decision: ApprovalDecision.optional() }),
  approvalResponse: z.object({ requestId: z.string(), decision: ApprovalDecision, source: ApprovalSource }),
  error: z.object({ code: z.string(), message: z.string() }),
  systemNotice: z.object({
    kind: z.string(),
    message: z.string(),
    summary: z.string().optional().describe('For kind "compaction": the summary that replaces the earlier conversation.'),
    coversThroughItemId: z.string().optional(),
    keptUserItemId: z.string().optional(),
  }),
};

// The payloads are declared twice, as domain types (what the runtime records) and here (what the
// wire carries); the compiler holds them equal, so neither can drift.
type WirePayloads = { [T in keyof typeof payloads]: z.output<(typeof payloads)[T]> };
const payloadsMatchTheDomain: Same<WirePayloads, ItemPayloads> = true;
void payloadsMatchTheDomain;

// The payload schema is passed in (not looked up by type) so each item's type narrows its payload.
const itemOf = <T extends keyof typeof payloads, P extends z.ZodObject>(type: T, payload: P) =>
  z
    .object({
      id: z.string(),
      threadId: z.string(),
      turnId: z.string(),
      type: z.literal(type),
      status: z.enum(["started", "streaming", "completed"]),
      createdAt: iso,
      completedAt: iso.optional(),
      payload: payload.passthrough(),
    })
    .passthrough();

export const Item = z.discriminatedUnion("type", [
  itemOf("userMessage", payloads.userMessage),
  itemOf("agentMessage", payloads.agentMessage),
  itemOf("reasoningContent", payloads.reasoningContent),
  itemOf("toolCall", payloads.toolCall),
  itemOf("toolResult", payloads.toolResult),
  itemOf("pluginFunctionCall", payloads.pluginFunctionCall),
  itemOf("dynamicToolCall", payloads.dynamicToolCall),
  itemOf("commandExecution", payloads.commandExecution),
  itemOf("toolExecution", payloads.toolExecution),
  itemOf("fileChange", payloads.fileChange),
  itemOf("approvalRequest", payloads.approvalRequest),
  itemOf("approvalResponse", payloads.approvalResponse),
  itemOf("error", payloads.error),
  itemOf("systemNotice", payloads.systemNotice),
]);

export const Turn = z
  .object({
    id: z.string(),
    threadId: z.string(),
    status: z.enum(["running", "completed", "waitingApproval", "failed", "cancelled"]),
    startedAt: iso,
    completedAt: iso.optional(),
    tokenUsage: TokenUsage.optional(),
    error: TurnError.optional(),
    cancelReason: z.string().optional().describe("Why a cancelled turn was cancelled."),
    diff: z.string().optional().describe("The unified diff of every file the turn changed."),
    input: z.array(InputPart),
    model: z.string().optional(),
    items: z.array(Item).optional(),
  })
  .passthrough();

export const QueuedInput = z.object({ id: z.string(), input: z.array(InputPart), createdAt: iso });
export const ThreadRuntime = z.object({ running: z.boolean(), waitingOnApproval: z.boolean() });

export const Plan = z
  .object({
    explanation: z.string().optional(),
    steps: z.array(z.object({ step: z.string(), status: z.enum(["pending", "in_progress", "completed"]) })),
    updatedAt: iso,
    turnId: z.string().optional(),
  })
  .passthrough();

export const Thread = z
  .object({
    id: z.string(),
    workspacePath: z.string(),
    userId: z.string().optional(),
    originChannel: z.string(),
    channelContext: z.string().optional(),
    displayName: z.string().optional(),
    status: z.enum(["active", "paused", "archived"]),
    createdAt: iso,
    lastActiveAt: iso,
    historyMode: z.enum(["server", "client"]),
    mode: z.enum(["agent", "plan"]),
    configuration: ThreadConfiguration.partial().passthrough().optional(),
    metadata: z.record(z.string(), z.unknown()),
    runtime: ThreadRuntime,
    queuedInputs: z.array(QueuedInput),
    tokenUsage: TokenUsage.optional().describe("Summed over the thread's turns."),
    turns: z.array(Turn).optional(),
  })
  .passthrough();

export const ModelEntry = z.object({
  id: z.string(),
  provider: z.string().describe("Pass back as turn/start provider (with this id as model) to use it."),
  displayName: z.string().optional(),
  contextWindow: z.number().int().optional(),
  maxOutputTokens: z.number().int().optional(),
  reasoning: z.boolean(),
  inputModalities: z
    .array(z.enum(["text", "image"]))
    .optional()
    .describe('What the model takes: "image" means image and localImage inputs reach it. Absent when unknown (sent anyway).'),
  pricing: z.object({ inputPerMTok: z.number(), outputPerMTok: z.number(), cachedInputPerMTok: z.number().optional() }).optional(),
  isDefault: z.boolean(),
});

export const BackendEntry = z.object({
  type: z.enum(["builtin", "claude-code", "codex", "acp"]),
  available: z.boolean(),
  command: z.string().optional().describe("The command that would run."),
  version: z.string().optional(),
  problem: z.string().optional().describe("Why it is unavailable."),
  features: z.array(z.string()).describe("What it supports: resume, approvals, reasoning, plan, usage, cost, ..."),
});

const ThreadResult = z.object({ thread: Thread });

export const ServerCapabilities = z.record(z.string(), z.boolean());

/** Client -> server requests. */
export const AppServerRequests = {
  initialize: {
    description: "Handshake, the first request: the client's identity and capabilities in, the server's out.",
    params: AppServerParams.initialize,
    result: z.object({
      serverInfo: z.object({ name: z.string(), version: z.string(), protocolVersion: z.string(), extensions: z.array(z.string()) }),
      capabilities: ServerCapabilities,
    }),
  },
  "thread/start": {
    description: "Creates a thread and subscribes this connection to it.",
    params: AppServerParams["thread/start"],
    result: ThreadResult,
  },
  "thread/resume": {
    description: "Reopens a thread, with its turns, and subscribes this connection to it.",
    params: AppServerParams["thread/resume"],
    result: ThreadResult,
  },
  "thread/list": {
    description: "Lists threads, filtered by identity and status, a page at a time.",
    params: AppServerParams["thread/list"],
    result: z.object({ data: z.array(Thread), nextCursor: z.string().optional() }),
  },
  "thread/read": {
    description: "Reads a thread (with its turns unless includeTurns is false) and its current plan.",
    params: AppServerParams["thread/read"],
    result: z.object({ thread: Thread, plan: Plan.optional() }),
  },
  "thread/subscribe": {
    description: "Follows a thread's events, first replaying every event after afterSeq.",
    params: AppServerParams["thread/subscribe"],
    result: z.object({ subscribed: z.literal(true), replayed: z.number().int(), runtime: ThreadRuntime }),
  },
  "thread/unsubscribe": {
    description: "Stops following a thread's events.",
    params: AppServerParams["thread/unsubscribe"],
    result: z.object({ unsubscribed: z.boolean() }),
  },
  "thread/rename": {
    description: "Sets a thread's display name.",
    params: AppServerParams["thread/rename"],
    result: ThreadResult,
  },
  "thread/delete": {
    description: "Deletes a thread, interrupting its running turn first.",
    params: AppServerParams["thread/delete"],
    result: z.object({ deleted: z.literal(true) }),
  },
  "thread/pause": {
    description: "Pauses a thread: new turns are refused (-32011) and queued inputs wait; a running turn finishes.",
    params: AppServerParams["thread/pause"],
    result: ThreadResult,
  },
  "thread/unpause": {
    description: "Makes a paused thread active again; an idle thread then starts its next queued input.",
    params: AppServerParams["thread/unpause"],
    result: ThreadResult,
  },
  "thread/archive": {
    description:
      "Archives a thread: hidden from thread/list unless asked for, a running turn is cancelled, new turns are refused (-32011).",
    params: AppServerParams["thread/archive"],
    result: ThreadResult,
  },
  "thread/unarchive": {
    description: "Makes an archived thread active again; an idle thread then starts its next queued input.",
    params: AppServerParams["thread/unarchive"],
    result: ThreadResult,
  },
  "thread/config/update": {
    description: "Merges settings into a thread's configuration.",
    params: AppServerParams["thread/config/update"],
    result: ThreadResult,
  },
  "thread/mode/set": {
    description: "Switches a thread between agent and plan mode.",
    params: AppServerParams["thread/mode/set"],
    result: ThreadResult,
  },
  "turn/start": {
    description: "Starts a turn on an idle thread; answers at once while the turn runs.",
    params: AppServerParams["turn/start"],
    result: z.object({ turn: Turn }),
  },
  "turn/enqueue": {
    description: "Starts a turn if the thread is idle, else queues the input to run after the current turn.",
    params: AppServerParams["turn/enqueue"],
    result: z.object({ turn: Turn.optional(), queuedInput: QueuedInput.optional(), queuedInputs: z.array(QueuedInput) }),
  },
  "turn/steer": {
    description: "Adds input to the running turn; the model reads it at its next step.",
    params: AppServerParams["turn/steer"],
    result: z.object({ turnId: z.string() }),
  },
  "turn/queue/remove": {
    description: "Removes an input from the thread's queue.",
    params: AppServerParams["turn/queue/remove"],
    result: z.object({ queuedInputs: z.array(QueuedInput) }),
  },
  "turn/interrupt": {
    description: "Cancels the running turn and answers once it has ended.",
    params: AppServerParams["turn/interrupt"],
    result: z.object({ turn: Turn }),
  },
  "model/list": {
    description: "Lists the models the configured providers offer, optionally one provider's only.",
    params: AppServerParams["model/list"],
    result: z.object({ data: z.array(ModelEntry) }),
  },
  "backend/list": {
    description: "Lists the backends a thread can run on (configuration.backend) and whether each is available here.",
    params: AppServerParams["backend/list"],
    result: z.object({ data: z.array(BackendEntry) }),
  },
  ...ManagementRequests,
} as const;

const threadEvent = <S extends z.ZodRawShape>(shape: S) => z.object({ threadId: z.string(), seq, ...shape }).passthrough();
const itemDelta = threadEvent({ turnId: z.string(), itemId: z.string(), delta: z.string() });

/** Server -> client notifications. */
export const AppServerNotifications = {
  "thread/started": threadEvent({ thread: Thread }).describe("A thread was created (sent to every connection)."),
  "thread/resumed": threadEvent({ thread: Thread }).describe("A thread was resumed."),
  "thread/renamed": threadEvent({ displayName: z.string() }).describe("A thread's display name changed."),
  "thread/deleted": threadEvent({}).describe("A thread was deleted (sent to every connection)."),
  "thread/statusChanged": threadEvent({ status: z.enum(["active", "paused", "archived"]) }).describe(
    "A thread was paused, unpaused, archived or unarchived (sent to every connection: thread lists change).",
  ),
  "thread/configUpdated": threadEvent({ configuration: ThreadConfiguration.partial().passthrough() }).describe(
    "A thread's configuration changed (thread/config/update); carries the whole merged configuration.",
  ),
  "thread/modeChanged": threadEvent({ mode: z.enum(["agent", "plan"]) }).describe(
    "A thread switched between agent and plan mode (thread/mode/set).",
  ),
  "thread/runtimeChanged": threadEvent({ runtime: ThreadRuntime }).describe(
    "Whether the thread is running or waiting on an approval changed.",
  ),
  "thread/queue/updated": threadEvent({ queuedInputs: z.array(QueuedInput) }).describe("The thread's queue of pending inputs changed."),
  "turn/started": threadEvent({ turn: Turn }).describe("A turn started."),
  "turn/completed": threadEvent({ turn: Turn }).describe("A turn completed."),
  "turn/failed": threadEvent({ turn: Turn, error: TurnError }).describe("A turn failed; error says why."),
  "turn/cancelled": threadEvent({ turn: Turn, reason: z.string() }).describe("A turn was cancelled; reason says why."),
  "turn/diff/updated": threadEvent({ turnId: z.string(), diff: z.string() }).describe(
    "The unified diff of every file the turn has changed so far.",
  ),
  "plan/updated": threadEvent({ turnId: z.string(), plan: Plan }).describe("The agent updated its plan."),
  "item/started": threadEvent({ turnId: z.string(), item: Item }).describe("An item started."),
  "item/completed": threadEvent({ turnId: z.string(), item: Item }).describe("An item reached its final state."),
  "item/agentMessage/delta": itemDelta.describe("More text of an agentMessage item."),
  "item/reasoning/delta": itemDelta.describe("More text of a reasoningContent item."),
  "item/toolCall/argumentsDelta": itemDelta.describe("More of a toolCall item's arguments (JSON text)."),
  "item/commandExecution/outputDelta": itemDelta
    .extend({ stream: z.enum(["stdout", "stderr"]).optional() })
    .describe("More output of a commandExecution item."),
  "item/usage/delta": threadEvent({
    turnId: z.string(),
    usage: TokenUsage.describe("This model call's usage."),
    total: TokenUsage.describe("The turn's total so far."),
  }).describe("Token usage of one model call, and the turn's total so far."),
  "item/approval/resolved": threadEvent({
    turnId: z.string(),
    itemId: z.string(),
    requestId: z.string(),
    decision: ApprovalDecision,
    source: ApprovalSource,
  }).describe(
    "An approval was decided: by a client, a session grant, a remembered rule, the policy or a timeout. itemId is the approvalRequest item, or the approvalResponse item when a grant or rule answered without asking.",
  ),
  "server/statusChanged": z
    .object({
      status: z.enum(["ok", "storageUnavailable"]),
      cause: z.string().optional().describe("SQLite's or the system's error code, e.g. SQLITE_FULL or ENOSPC."),
      message: z.string().optional(),
      since: z.string().optional(),
    })
    .describe(
      "The server's storage became unavailable (disk full, I/O error: reads still work, writes answer -32030, running turns wait) or available again (sent to every connection; not part of any thread's log).",
    ),
  ...ManagementNotifications,
} as const;

/** A client's answer to item/tool/call: its output as text, or Codex-style content items. */
export const ClientToolAnswer = z.object({
  success: z.boolean(),
  output: z.string().optional(),
  contentItems: z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough()).optional(),
});

/** Server -> client requests. */
export const AppServerServerRequests = {
  "item/tool/call": {
    description:
      "Runs a tool this client provides (configuration.dynamicTools) for the model; the first client's answer is the result, recorded in a dynamicToolCall item.",
    params: z.object({ threadId: z.string(), turnId: z.string(), callId: z.string(), tool: z.string(), arguments: z.unknown() }),
    result: ClientToolAnswer,
  },
  "item/approval/request": {
    description: "Asks the client to approve a shell command or a file write; the first answer wins.",
    params: ApprovalQuestion.extend({
      threadId: z.string(),
      turnId: z.string(),
      itemId: z.string(),
      availableDecisions: z.array(ApprovalDecision),
    }).passthrough(),
    result: ApprovalAnswer,
  },
} as const;

/** The whole surface, for `switchyard schema` (JSON Schema, TypeScript declarations, docs/reference/appserver.md). */
export const appServerProtocol = {
  name: "appserver",
  title: "AppServer protocol",
  source: "src/faces/appserver/protocol.ts",
  requests: AppServerRequests,
  notifications: AppServerNotifications,
  serverRequests: AppServerServerRequests,
  objects: {
    Thread,
    ThreadRuntime,
    QueuedInput,
    Turn,
    TurnError,
    TokenUsage,
    Item,
    InputPart,
    Plan,
    ModelEntry,
    BackendEntry,
    ThreadConfiguration,
    ApprovalPolicy,
    ClientCapabilities,
    ServerCapabilities,
    ApprovalType,
    ApprovalDecision,
    ApprovalSource,
    SkillInfo,
    CommandInfo,
    McpServerConfig,
    McpServerStatus,
    CronJobInfo,
    SubAgentProfileEntry,
    ExternalChannelConfig,
    PluginInfo,
  },
} satisfies ProtocolTable;

export type AppServerRequestMethod = keyof typeof AppServerRequests;
export type AppServerNotificationMethod = keyof typeof AppServerNotifications;
export type RequestParams<M extends AppServerRequestMethod> = z.input<(typeof AppServerRequests)[M]["params"]>;
export type RequestResult<M extends AppServerRequestMethod> = z.output<(typeof AppServerRequests)[M]["result"]>;
export type NotificationParams<M extends AppServerNotificationMethod> = z.output<(typeof AppServerNotifications)[M]>;
export type WireItem = z.output<typeof Item>;
export type WireTurn = z.output<typeof Turn>;
export type WireThread = z.output<typeof Thread>;
