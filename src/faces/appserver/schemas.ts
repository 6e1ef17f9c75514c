// AppServer protocol: the params of every client -> server method, declared once. They
// validate requests at run time and give the handlers their types.
import { z } from "zod";
import { BackendSpecSchema } from "../../backends/spec.js";

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
