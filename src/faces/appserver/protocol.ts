// AppServer protocol: the whole surface in one table — every client request (params and
// result), every notification, every server -> client request, and the objects they carry.
// The server validates requests with these params schemas; the exported JSON Schema, the
// TypeScript declarations and the typed client are all generated from this table.
import { z } from "zod";
import { AppServerParams, ApprovalAnswer, InputPart, ThreadConfiguration } from "./schemas.js";

const iso = z.string().describe("ISO 8601 timestamp.");
const seq = z.number().int().describe("Position of the event in the server's log; resubscribe with afterSeq to catch up.");

export const TokenUsage = z
  .object({
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    totalTokens: z.number().int(),
    cachedInputTokens: z.number().int().optional(),
    reasoningTokens: z.number().int().optional(),
  })
  .passthrough();

export const TurnError = z.object({ code: z.string(), message: z.string(), httpStatus: z.number().int().optional() }).passthrough();

const ApprovalDecision = z.enum(["accept", "acceptForSession", "acceptAlways", "decline", "cancel"]);
const ApprovalSource = z.enum(["client", "session", "always", "policy", "timeout"]);
const ApprovalType = z.enum(["shell", "file"]);

const payloads = {
  userMessage: z.object({ text: z.string(), input: z.array(InputPart), steered: z.boolean().optional() }),
  agentMessage: z.object({ text: z.string() }),
  reasoningContent: z.object({ text: z.string(), signature: z.string().optional() }),
  toolCall: z.object({ callId: z.string(), toolName: z.string(), argumentsText: z.string(), arguments: z.unknown().optional() }),
  toolResult: z.object({ callId: z.string(), toolName: z.string(), success: z.boolean(), output: z.string() }),
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
  approvalRequest: z.object({
    requestId: z.string(),
    callId: z.string(),
    approvalType: ApprovalType,
    operation: z.string(),
    target: z.string(),
    scopeKey: z.string(),
    reason: z.string(),
    decision: ApprovalDecision.optional(),
  }),
  approvalResponse: z.object({ requestId: z.string(), decision: ApprovalDecision, source: ApprovalSource }),
  error: z.object({ code: z.string(), message: z.string() }),
  systemNotice: z.object({ kind: z.string(), message: z.string() }),
};

const itemOf = <T extends keyof typeof payloads>(type: T) =>
  z
    .object({
      id: z.string(),
      threadId: z.string(),
      turnId: z.string(),
      type: z.literal(type),
      status: z.enum(["started", "streaming", "completed"]),
      createdAt: iso,
      completedAt: iso.optional(),
      payload: payloads[type].passthrough(),
    })
    .passthrough();

export const Item = z.discriminatedUnion("type", [
  itemOf("userMessage"),
  itemOf("agentMessage"),
  itemOf("reasoningContent"),
  itemOf("toolCall"),
  itemOf("toolResult"),
  itemOf("commandExecution"),
  itemOf("toolExecution"),
  itemOf("fileChange"),
  itemOf("approvalRequest"),
  itemOf("approvalResponse"),
  itemOf("error"),
  itemOf("systemNotice"),
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
    turns: z.array(Turn).optional(),
  })
  .passthrough();

const ThreadResult = z.object({ thread: Thread });

export const ServerCapabilities = z.record(z.string(), z.boolean());

/** Client -> server requests. */
export const AppServerRequests = {
  initialize: {
    params: AppServerParams.initialize,
    result: z.object({
      serverInfo: z.object({ name: z.string(), version: z.string(), protocolVersion: z.string(), extensions: z.array(z.string()) }),
      capabilities: ServerCapabilities,
    }),
  },
  "thread/start": { params: AppServerParams["thread/start"], result: ThreadResult },
  "thread/resume": { params: AppServerParams["thread/resume"], result: ThreadResult },
  "thread/list": {
    params: AppServerParams["thread/list"],
    result: z.object({ data: z.array(Thread), nextCursor: z.string().optional() }),
  },
  "thread/read": { params: AppServerParams["thread/read"], result: z.object({ thread: Thread, plan: Plan.optional() }) },
  "thread/subscribe": {
    params: AppServerParams["thread/subscribe"],
    result: z.object({ subscribed: z.literal(true), replayed: z.number().int(), runtime: ThreadRuntime }),
  },
  "thread/unsubscribe": { params: AppServerParams["thread/unsubscribe"], result: z.object({ unsubscribed: z.boolean() }) },
  "thread/rename": { params: AppServerParams["thread/rename"], result: ThreadResult },
  "thread/delete": { params: AppServerParams["thread/delete"], result: z.object({ deleted: z.literal(true) }) },
  "thread/config/update": { params: AppServerParams["thread/config/update"], result: ThreadResult },
  "thread/mode/set": { params: AppServerParams["thread/mode/set"], result: ThreadResult },
  "turn/start": { params: AppServerParams["turn/start"], result: z.object({ turn: Turn }) },
  "turn/enqueue": {
    params: AppServerParams["turn/enqueue"],
    result: z.object({ turn: Turn.optional(), queuedInput: QueuedInput.optional(), queuedInputs: z.array(QueuedInput) }),
  },
  "turn/steer": { params: AppServerParams["turn/steer"], result: z.object({ turnId: z.string() }) },
  "turn/queue/remove": { params: AppServerParams["turn/queue/remove"], result: z.object({ queuedInputs: z.array(QueuedInput) }) },
  "turn/interrupt": { params: AppServerParams["turn/interrupt"], result: z.object({ turn: Turn }) },
} as const;

const threadEvent = <S extends z.ZodRawShape>(shape: S) => z.object({ threadId: z.string(), seq, ...shape }).passthrough();
const itemDelta = threadEvent({ turnId: z.string(), itemId: z.string(), delta: z.string() });

/** Server -> client notifications. */
export const AppServerNotifications = {
  "thread/started": threadEvent({ thread: Thread }),
  "thread/resumed": threadEvent({ thread: Thread }),
  "thread/renamed": threadEvent({ displayName: z.string() }),
  "thread/deleted": threadEvent({}),
  "thread/runtimeChanged": threadEvent({ runtime: ThreadRuntime }),
  "thread/queue/updated": threadEvent({ queuedInputs: z.array(QueuedInput) }),
  "turn/started": threadEvent({ turn: Turn }),
  "turn/completed": threadEvent({ turn: Turn }),
  "turn/failed": threadEvent({ turn: Turn, error: TurnError }),
  "turn/cancelled": threadEvent({ turn: Turn, reason: z.string() }),
  "turn/diff/updated": threadEvent({ turnId: z.string(), diff: z.string() }),
  "plan/updated": threadEvent({ turnId: z.string(), plan: Plan }),
  "item/started": threadEvent({ turnId: z.string(), item: Item }),
  "item/completed": threadEvent({ turnId: z.string(), item: Item }),
  "item/agentMessage/delta": itemDelta,
  "item/reasoning/delta": itemDelta,
  "item/toolCall/argumentsDelta": itemDelta,
  "item/commandExecution/outputDelta": itemDelta.extend({ stream: z.enum(["stdout", "stderr"]).optional() }),
  "item/approval/resolved": threadEvent({
    turnId: z.string(),
    itemId: z.string(),
    requestId: z.string(),
    decision: ApprovalDecision,
    source: ApprovalSource,
  }),
} as const;

/** Server -> client requests. */
export const AppServerServerRequests = {
  "item/approval/request": {
    params: z
      .object({
        threadId: z.string(),
        turnId: z.string(),
        itemId: z.string(),
        requestId: z.string(),
        callId: z.string(),
        approvalType: ApprovalType,
        operation: z.string(),
        target: z.string(),
        scopeKey: z.string(),
        reason: z.string(),
        availableDecisions: z.array(ApprovalDecision),
      })
      .passthrough(),
    result: ApprovalAnswer,
  },
} as const;

export type AppServerRequestMethod = keyof typeof AppServerRequests;
export type AppServerNotificationMethod = keyof typeof AppServerNotifications;
export type RequestParams<M extends AppServerRequestMethod> = z.input<(typeof AppServerRequests)[M]["params"]>;
export type RequestResult<M extends AppServerRequestMethod> = z.output<(typeof AppServerRequests)[M]["result"]>;
export type NotificationParams<M extends AppServerNotificationMethod> = z.output<(typeof AppServerNotifications)[M]>;
export type WireItem = z.output<typeof Item>;
export type WireTurn = z.output<typeof Turn>;
export type WireThread = z.output<typeof Thread>;
