// claude-app-server protocol: every wire shape, declared once as zod schemas, in the
// same table shape as every face (FaceProtocol): requests (params and result), notifications,
// server requests and objects. The params schemas validate requests at run time; the result and
// notification schemas type what the face sends; `switchyard schema` exports them all.
import { z } from "zod";
import { BackendSpecSchema } from "../../domain/backend-spec-schema.js";
import type { ProtocolTable } from "../../rpc/protocol-table.js";

const threadId = z.string().min(1).describe("Thread id.");

export const PermissionMode = z
  .enum(["default", "acceptEdits", "bypassPermissions"])
  .describe("default: ask for bash and file writes; acceptEdits: ask for bash only; bypassPermissions: never ask.");
export type PermissionMode = z.infer<typeof PermissionMode>;

const Millis = z.number().int().describe("Epoch milliseconds.");

/** An image content block, as in the Anthropic Messages API: inline base64 data or a URL. */
export const ImageBlock = z.object({
  type: z.literal("image"),
  source: z.discriminatedUnion("type", [
    z.object({ type: z.literal("base64"), media_type: z.string().min(1), data: z.string().min(1) }),
    z.object({ type: z.literal("url"), url: z.string().min(1) }),
  ]),
});

/** A prompt: plain text, or Claude-style content blocks (text and image blocks). */
export const Content = z.union([
  z.string().min(1, "content must not be empty"),
  z
    .array(z.discriminatedUnion("type", [z.object({ type: z.literal("text"), text: z.string() }), ImageBlock]))
    .min(1, "content must contain at least one block"),
]);
export type Content = z.infer<typeof Content>;

// ---- objects -------------------------------------------------------------------------------

/** An item's content: the original's Item union, with Switchyard's extra keys beside its own. */
export const ItemContent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("thinking"), thinking: z.string() }),
  z.object({ type: z.literal("tool_call"), tool_use_id: z.string(), name: z.string(), input: z.unknown() }),
  z.object({ type: z.literal("tool_result"), tool_use_id: z.string(), content: z.string(), is_error: z.boolean() }),
  z.object({
    type: z.literal("file_change"),
    path: z.string(),
    operation: z.enum(["create", "update", "delete"]),
    tool_use_id: z.string().describe("Switchyard extension: the tool call that made the change."),
    diff: z.string().describe("Switchyard extension: the change as a unified diff."),
  }),
  z.object({
    type: z.literal("command_output"),
    command: z.string(),
    stdout: z.string().describe("The command's output (stdout and stderr interleaved, as the agent saw it)."),
    stderr: z.string().describe("Always empty: the output is captured as one stream (see stdout)."),
    exit_code: z.number().int().describe("-1 when the command did not exit on its own (timed out or interrupted)."),
    tool_use_id: z.string().describe("Switchyard extension: the tool call that ran the command."),
  }),
]);
export type ItemContent = z.infer<typeof ItemContent>;

/** A finalized item: its content nested under `item`, as the original stores and sends it. */
export const StoredItem = z.object({ id: z.string(), created_at: Millis, item: ItemContent });
export type StoredItem = z.infer<typeof StoredItem>;

/** A turn's status, in the original's vocabulary ("active": running or waiting for an approval; "error": failed). */
export const TurnStatus = z.enum(["active", "completed", "interrupted", "error"]);
export type TurnStatus = z.infer<typeof TurnStatus>;

export const WireTurn = z.object({
  id: z.string(),
  thread_id: z.string(),
  status: TurnStatus,
  user_content: z.string().describe("The text of the prompt that started the turn (the prompt is not an item)."),
  items: z.array(StoredItem),
  created_at: Millis,
  completed_at: Millis.optional().describe("Absent while the turn runs."),
  error: z.string().optional().describe("The failure's message, for a failed turn."),
  error_code: z.string().optional().describe("Switchyard extension: the failure's machine-readable reason."),
  steered_content: z.array(z.string()).optional().describe("Switchyard extension: the texts turn/steer added to the turn."),
  model: z.string().optional().describe("Switchyard extension: the model the turn ran with."),
});
export type WireTurn = z.infer<typeof WireTurn>;

// ---- requests ------------------------------------------------------------------------------

/** Client -> server requests. */
export const ClaudeRequests = {
  initialize: {
    description:
      "Handshake, the first request: the client's name, default cwd and permission mode; initialized follows the answer. A second initialize updates them.",
    params: z.object({
      client: z.object({ name: z.string(), version: z.string().optional() }).passthrough().optional(),
      cwd: z.string().min(1).optional(),
      permission_mode: PermissionMode.optional(),
    }),
    result: z.object({
      server: z.object({ name: z.literal("claude-app-server"), version: z.string() }),
      capabilities: z
        .object({
          threads: z.array(z.enum(["start", "resume", "fork"])),
          turns: z.array(z.enum(["start", "steer", "interrupt"])),
          models: z.array(z.string()).describe("The ids model/list answers with."),
          skills: z.array(z.string()).describe("The names skills/list answers with."),
          methods: z.array(z.string()),
          notifications: z.array(z.string()),
          permission_modes: z.array(PermissionMode),
          content_blocks: z.array(z.enum(["text", "image"])),
          streaming: z.boolean(),
          approvals: z.boolean(),
          thread_fork: z.boolean(),
          turn_steer: z.boolean(),
          turn_interrupt: z.boolean(),
        })
        .describe("threads, turns, models and skills as the original sends them; the other keys are Switchyard's."),
    }),
  },
  "thread/start": {
    description: "Creates a thread (cwd and permission mode default to initialize's) and follows it.",
    params: z.object({
      cwd: z.string().min(1).optional(),
      permission_mode: PermissionMode.optional(),
      backend: BackendSpecSchema.optional().describe("Switchyard extension: who runs the thread's turns (default: the server's)."),
    }),
    result: z.object({ thread_id: z.string(), created_at: Millis }),
  },
  "thread/resume": {
    description: "Reads a thread back with its turns and follows it.",
    params: z.object({ thread_id: threadId }),
    result: z.object({
      thread_id: z.string(),
      created_at: Millis,
      cwd: z.string(),
      permission_mode: PermissionMode,
      turns: z.array(WireTurn),
      updated_at: Millis.describe("Switchyard extension: the thread's last activity."),
      status: z.enum(["active", "paused", "archived"]).describe("Switchyard extension."),
      running: z.boolean().describe("Switchyard extension: whether a turn is running."),
      forked_from: z.string().optional().describe("Switchyard extension: the thread this one was forked from."),
    }),
  },
  "thread/fork": {
    description: "Copies a thread's finished turns, up to and including at_turn_id, into a new thread and follows it.",
    params: z.object({ thread_id: threadId, at_turn_id: z.string().min(1).optional() }),
    result: z.object({ thread_id: z.string(), forked_from: z.string(), created_at: Millis }),
  },
  "turn/start": {
    description: "Starts a turn; answers at once, then streams notifications until turn/completed.",
    params: z.object({
      thread_id: threadId,
      content: Content,
      model: z
        .string()
        .min(1)
        .optional()
        .describe(
          "A model id or alias from model/list; by default claude-opus-4-6 with adaptive thinking when the Anthropic provider is in use.",
        ),
    }),
    result: z.object({ turn_id: z.string() }),
  },
  "turn/steer": {
    description: "Adds input to the running turn; the model reads it at its next step.",
    params: z.object({ thread_id: threadId, content: Content }),
    result: z.object({ turn_id: z.string(), note: z.string() }),
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
      models: z.array(
        z.object({
          id: z.string(),
          name: z.string(),
          aliases: z.array(z.string()).describe("Short names turn/start accepts for this model."),
          display_name: z.string().describe("Switchyard extension: the same as name."),
          is_default: z.boolean().optional().describe("Switchyard extension: the model a turn uses when it names none."),
        }),
      ),
    }),
  },
  "skills/list": {
    description:
      "Lists the agent's tools, the JSON Schema of each one's input, and whether each asks for approval under this connection's permission mode.",
    params: z.object({}),
    result: z.object({
      skills: z.array(
        z.object({
          name: z.string(),
          description: z.string(),
          parameters: z.record(z.string(), z.unknown()).describe("JSON Schema of the tool's input."),
          needs_approval: z.boolean().describe("Switchyard extension."),
        }),
      ),
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
    result: z.object({
      ok: z.literal(true),
      thread_id: z.string(),
      approved: z.boolean(),
      permission_mode: PermissionMode.describe("The thread's mode (unchanged: an answer approves one tool call)."),
      note: z.string(),
    }),
  },
} as const;
export type ClaudeMethod = keyof typeof ClaudeRequests;
export type ClaudeResult<M extends ClaudeMethod> = z.infer<(typeof ClaudeRequests)[M]["result"]>;

// ---- server -> client notifications ----------------------------------------------------------

const inTurn = { thread_id: z.string(), turn_id: z.string() };

export const ClaudeNotifications = {
  initialized: z.object({ server: z.literal("claude-app-server") }).describe("Sent right after the answer to initialize."),
  "turn/started": z.object(inTurn).describe("A turn started."),
  "item/progress": z
    .object({
      ...inTurn,
      item_id: z.string(),
      delta: z.discriminatedUnion("type", [
        z.object({ type: z.literal("text"), text: z.string() }),
        z.object({ type: z.literal("thinking"), thinking: z.string() }),
      ]),
    })
    .describe("More text or thinking of an item still being streamed."),
  "item/created": z.object({ ...inTurn, item: StoredItem }).describe("An item was finalized (the user's prompt is not an item)."),
  "approval/request": z
    .object({
      ...inTurn,
      request_id: z.string(),
      tool_name: z.string(),
      description: z.string(),
      input: z.unknown(),
    })
    .describe("A tool call needs approval; answer with approval/respond."),
  "turn/completed": z
    .object({
      ...inTurn,
      status: z.enum(["completed", "interrupted", "error"]),
      items_count: z.number().int(),
      completed_at: Millis,
    })
    .describe("A turn ended, whatever the outcome: the single end-of-turn signal (status error after turn/error)."),
  "turn/error": z
    .object({
      ...inTurn,
      error: z.string().describe("The failure's message."),
      error_code: z.string().describe("Switchyard extension: the failure's machine-readable reason."),
    })
    .describe("A turn failed; its turn/completed (status error) follows."),
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
  source: "src/faces/claude/protocol.ts",
  requests: ClaudeRequests,
  notifications: ClaudeNotifications,
  serverRequests: ClaudeServerRequests,
  objects: { Content, ImageBlock, PermissionMode, StoredItem, ItemContent, Turn: WireTurn, TurnStatus },
} satisfies ProtocolTable;
