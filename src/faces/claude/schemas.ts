// claude-app-server dialect (spec 004): every wire shape, declared once as zod schemas, in the
// same table shape as every face (FaceProtocol): requests (params and result), notifications,
// server requests and objects. The params schemas validate requests at run time; the result and
// notification schemas type what the face sends; `switchyard schema` exports them all.
import { z } from "zod";
import { BackendSpecSchema } from "../../backends/spec.js";
import type { FaceProtocol } from "../protocol-table.js";

const threadId = z.string().min(1).describe("Thread id.");

export const PermissionMode = z
  .enum(["default", "acceptEdits", "bypassPermissions"])
  .describe("default: ask for bash and file writes; acceptEdits: ask for bash only; bypassPermissions: never ask.");
export type PermissionMode = z.infer<typeof PermissionMode>;

/** A prompt: plain text, or Claude-style content blocks (only text blocks are supported). */
export const Content = z.union([
  z.string().min(1, "content must not be empty"),
  z.array(z.object({ type: z.literal("text"), text: z.string() })).min(1, "content must contain at least one block"),
]);
export type Content = z.infer<typeof Content>;

// ---- objects -------------------------------------------------------------------------------

export const WireItem = z.discriminatedUnion("type", [
  z.object({ id: z.string(), type: z.literal("user"), text: z.string(), steered: z.boolean().optional() }),
  z.object({ id: z.string(), type: z.literal("text"), text: z.string() }),
  z.object({ id: z.string(), type: z.literal("thinking"), text: z.string() }),
  z.object({ id: z.string(), type: z.literal("tool_call"), tool_use_id: z.string(), tool_name: z.string(), input: z.unknown() }),
  z.object({ id: z.string(), type: z.literal("tool_result"), tool_use_id: z.string(), content: z.string(), is_error: z.boolean() }),
  z.object({ id: z.string(), type: z.literal("file_change"), tool_use_id: z.string(), path: z.string(), diff: z.string() }),
  z.object({
    id: z.string(),
    type: z.literal("command_output"),
    tool_use_id: z.string(),
    command: z.string(),
    output: z.string(),
    exit_code: z.number().int().nullable(),
  }),
]);
export type WireItem = z.infer<typeof WireItem>;

export const TurnStatus = z.enum(["running", "waiting_approval", "completed", "interrupted", "failed"]);
export type TurnStatus = z.infer<typeof TurnStatus>;

export const TurnError = z.object({ code: z.string(), message: z.string() });

export const WireTurn = z.object({
  turn_id: z.string(),
  status: TurnStatus,
  started_at: z.string(),
  completed_at: z.string().optional(),
  model: z.string().optional(),
  error: TurnError.optional(),
  items: z.array(WireItem),
});
export type WireTurn = z.infer<typeof WireTurn>;

// ---- requests ------------------------------------------------------------------------------

/** Client -> server requests. */
export const ClaudeRequests = {
  initialize: {
    description: "Handshake, the first request: the client's name, default cwd and permission mode; initialized follows the answer.",
    params: z.object({
      client: z.object({ name: z.string(), version: z.string().optional() }).passthrough().optional(),
      cwd: z.string().min(1).optional(),
      permission_mode: PermissionMode.optional(),
    }),
    result: z.object({
      server: z.object({ name: z.literal("claude-app-server"), version: z.string() }),
      capabilities: z.record(z.string(), z.unknown()),
    }),
  },
  "thread/start": {
    description: "Creates a thread (cwd and permission mode default to initialize's) and follows it.",
    params: z.object({
      cwd: z.string().min(1).optional(),
      permission_mode: PermissionMode.optional(),
      backend: BackendSpecSchema.optional().describe("Switchyard extension: who runs the thread's turns (default: the server's)."),
    }),
    result: z.object({ thread_id: z.string(), created_at: z.string() }),
  },
  "thread/resume": {
    description: "Reads a thread back with its turns and follows it.",
    params: z.object({ thread_id: threadId }),
    result: z.object({
      thread_id: z.string(),
      cwd: z.string(),
      permission_mode: PermissionMode,
      created_at: z.string(),
      updated_at: z.string(),
      status: z.enum(["active", "paused", "archived"]),
      running: z.boolean(),
      forked_from: z.string().optional(),
      turns: z.array(WireTurn),
    }),
  },
  "thread/fork": {
    description: "Copies a thread's finished turns, up to and including at_turn_id, into a new thread and follows it.",
    params: z.object({ thread_id: threadId, at_turn_id: z.string().min(1).optional() }),
    result: z.object({ thread_id: z.string(), forked_from: z.string(), created_at: z.string() }),
  },
  "turn/start": {
    description: "Starts a turn; answers at once, then streams notifications until turn/completed.",
    params: z.object({ thread_id: threadId, content: Content, model: z.string().min(1).optional() }),
    result: z.object({ turn_id: z.string() }),
  },
  "turn/steer": {
    description: "Adds input to the running turn; the model reads it at its next step.",
    params: z.object({ thread_id: threadId, content: Content }),
    result: z.object({ turn_id: z.string() }),
  },
  "turn/interrupt": {
    description: "Stops the running turn and answers with its final status.",
    params: z.object({ thread_id: threadId }),
    result: z.object({ turn_id: z.string(), status: TurnStatus }),
  },
  "model/list": {
    description: "Lists the default provider's models.",
    params: z.object({}),
    result: z.object({
      models: z.array(z.object({ id: z.string(), display_name: z.string(), is_default: z.boolean().optional() })),
    }),
  },
  "skills/list": {
    description: "Lists the agent's tools and whether each asks for approval under this connection's permission mode.",
    params: z.object({}),
    result: z.object({
      skills: z.array(z.object({ name: z.string(), description: z.string(), needs_approval: z.boolean() })),
    }),
  },
  "app/list": {
    description: "Lists apps (always empty).",
    params: z.object({}),
    result: z.object({ apps: z.array(z.never()) }),
  },
  "approval/respond": {
    description: "Answers an approval/request notification.",
    params: z.object({ request_id: z.string().min(1), approved: z.boolean() }),
    result: z.object({ ok: z.literal(true) }),
  },
} as const;
export type ClaudeMethod = keyof typeof ClaudeRequests;
export type ClaudeResult<M extends ClaudeMethod> = z.infer<(typeof ClaudeRequests)[M]["result"]>;

/** The params schemas alone, by method (in table order), for the session's method table. */
export const ClaudeParams = Object.fromEntries(Object.entries(ClaudeRequests).map(([name, spec]) => [name, spec.params])) as {
  [M in ClaudeMethod]: (typeof ClaudeRequests)[M]["params"];
};

// ---- server -> client notifications ----------------------------------------------------------

const inTurn = { thread_id: z.string(), turn_id: z.string() };

export const ClaudeNotifications = {
  initialized: z.object({ server: z.literal("claude-app-server") }).describe("Sent right after the answer to initialize."),
  "turn/started": z.object(inTurn).describe("A turn started."),
  "item/progress": z.object({
    ...inTurn,
    item_id: z.string(),
    delta: z.object({ type: z.enum(["text", "thinking"]), text: z.string() }),
  }).describe("More text or thinking of an item still being streamed."),
  "item/created": z.object({ ...inTurn, item: WireItem }).describe("An item was finalized."),
  "approval/request": z.object({
    ...inTurn,
    request_id: z.string(),
    tool_name: z.string(),
    description: z.string(),
    input: z.unknown(),
  }).describe("A tool call needs approval; answer with approval/respond."),
  "turn/completed": z.object({
    ...inTurn,
    status: z.enum(["completed", "interrupted", "failed"]),
    items_count: z.number().int(),
    completed_at: z.string(),
  }).describe("A turn ended, whatever the outcome: the single end-of-turn signal."),
  "turn/error": z.object({ ...inTurn, error: TurnError }).describe("A turn failed; its turn/completed (status failed) follows."),
} as const;
export type ClaudeNotificationMethod = keyof typeof ClaudeNotifications;
export type ClaudeNotificationParams<M extends ClaudeNotificationMethod> = z.infer<(typeof ClaudeNotifications)[M]>;
export type ClaudeNotification = {
  [M in ClaudeNotificationMethod]: { method: M; params: ClaudeNotificationParams<M> };
}[ClaudeNotificationMethod];

/** Server -> client requests: none (approvals are asked with the approval/request notification). */
export const ClaudeServerRequests = {} as const;

/** The whole surface, for `switchyard schema` (JSON Schema, TypeScript declarations, docs/reference/claude.md). */
export const claudeProtocol = {
  name: "claude",
  title: "claude-app-server protocol",
  source: "src/faces/claude/schemas.ts",
  requests: ClaudeRequests,
  notifications: ClaudeNotifications,
  serverRequests: ClaudeServerRequests,
  objects: { Content, PermissionMode, Item: WireItem, Turn: WireTurn, TurnStatus, TurnError },
} satisfies FaceProtocol;
