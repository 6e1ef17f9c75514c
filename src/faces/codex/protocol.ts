// The Codex app-server dialect (v2, as `codex app-server` 0.169.0 speaks it): the requests its
// clients make for a session, the notifications and approval requests they read, declared once
// as zod schemas in the shape every face uses. Shapes follow the schema Codex generates
// (`codex app-server generate-json-schema`); test/faces/codex-schema.test.ts checks what this
// face sends against it. Codex's clients send `null` for an absent optional field, so every
// optional param here is nullish.
import { z } from "zod";
import type { ProtocolTable } from "../../rpc/protocol-table.js";

const nullable = <T extends z.ZodType>(schema: T) => schema.nullable();
const threadId = z.string().min(1).describe("Thread id (a UUID, as Codex's clients parse it).");
const Seconds = z.number().int().describe("Unix time in seconds.");
const NoResult = z.object({}).strict();

export const AskForApproval = z
  .union([z.enum(["untrusted", "on-request", "never"]), z.object({ granular: z.record(z.string(), z.boolean()) })])
  .describe("When the agent asks before running a command or changing a file.");
export type AskForApproval = z.infer<typeof AskForApproval>;
export const SandboxMode = z.enum(["read-only", "workspace-write", "danger-full-access"]);
export const SandboxPolicy = z.discriminatedUnion("type", [
  z.object({ type: z.literal("dangerFullAccess") }),
  z.object({ type: z.literal("readOnly"), networkAccess: z.boolean() }),
  z.object({
    type: z.literal("workspaceWrite"),
    writableRoots: z.array(z.string()),
    networkAccess: z.boolean(),
    excludeTmpdirEnvVar: z.boolean(),
    excludeSlashTmp: z.boolean(),
  }),
]);

export const UserInput = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string(), text_elements: z.array(z.unknown()).nullish() }),
  z.object({ type: z.literal("image"), url: z.string() }),
  z.object({ type: z.literal("localImage"), path: z.string() }),
  z.object({ type: z.literal("skill"), name: z.string(), path: z.string() }),
  z.object({ type: z.literal("mention"), name: z.string(), path: z.string() }),
]);
export type UserInput = z.infer<typeof UserInput>;

export const ThreadStatus = z.discriminatedUnion("type", [
  z.object({ type: z.literal("notLoaded") }),
  z.object({ type: z.literal("idle") }),
  z.object({ type: z.literal("systemError") }),
  z.object({ type: z.literal("active"), activeFlags: z.array(z.enum(["waitingOnApproval", "waitingOnUserInput"])) }),
]);

const ItemStatus = z.enum(["inProgress", "completed", "failed", "declined"]);
const itemBase = { id: z.string(), startedAtMs: nullable(z.number()).optional(), completedAtMs: nullable(z.number()).optional() };
export const ThreadItem = z.discriminatedUnion("type", [
  z.object({ type: z.literal("userMessage"), ...itemBase, clientId: nullable(z.string()), content: z.array(UserInput) }),
  z.object({
    type: z.literal("agentMessage"),
    ...itemBase,
    text: z.string(),
    phase: z.null(),
    moderation: z.null(),
    memoryCitation: z.null(),
    delivery: z.null(),
    questions: z.null(),
  }),
  z.object({ type: z.literal("reasoning"), ...itemBase, summary: z.array(z.string()), content: z.array(z.string()) }),
  z.object({
    type: z.literal("commandExecution"),
    ...itemBase,
    pluginId: z.null(),
    scriptPath: z.null(),
    command: z.string(),
    cwd: z.string(),
    processId: z.null(),
    source: z.literal("agent"),
    status: ItemStatus,
    commandActions: z.array(z.object({ type: z.literal("unknown"), command: z.string() })),
    aggregatedOutput: nullable(z.string()),
    exitCode: nullable(z.number().int()),
    durationMs: nullable(z.number().int()),
  }),
  z.object({
    type: z.literal("fileChange"),
    ...itemBase,
    changes: z.array(
      z.object({
        path: z.string(),
        kind: z.union([z.object({ type: z.literal("add") }), z.object({ type: z.literal("update"), move_path: z.null() })]),
        diff: z.string(),
      }),
    ),
    status: ItemStatus,
  }),
  z.object({
    type: z.literal("mcpToolCall"),
    ...itemBase,
    server: z.string(),
    tool: z.string(),
    status: z.enum(["inProgress", "completed", "failed"]),
    arguments: z.unknown(),
    appContext: z.null(),
    mcpAppUi: z.null(),
    pluginId: z.null(),
    readOnlyHint: z.null(),
    result: nullable(z.object({ content: z.array(z.unknown()), structuredContent: z.unknown(), _meta: z.unknown() })),
    error: nullable(z.object({ message: z.string() })),
    durationMs: z.null(),
  }),
  z.object({
    type: z.literal("dynamicToolCall"),
    ...itemBase,
    namespace: z.null(),
    tool: z.string(),
    arguments: z.unknown(),
    status: z.enum(["inProgress", "completed", "failed"]),
    contentItems: nullable(z.array(z.object({ type: z.literal("inputText"), text: z.string() }))),
    success: nullable(z.boolean()),
    durationMs: z.null(),
  }),
]);
export type ThreadItem = z.infer<typeof ThreadItem>;

export const TurnStatus = z.enum(["completed", "interrupted", "failed", "inProgress"]);
export const Turn = z.object({
  id: z.string(),
  rootTurnId: z.null(),
  items: z.array(ThreadItem),
  itemsView: z.enum(["notLoaded", "summary", "full"]),
  status: TurnStatus,
  error: nullable(
    z.object({ message: z.string(), codexErrorInfo: z.null(), additionalDetails: nullable(z.string()), misalignment: z.null() }),
  ),
  startedAt: nullable(Seconds),
  completedAt: nullable(Seconds),
  durationMs: nullable(z.number().int()),
});
export type Turn = z.infer<typeof Turn>;

export const SessionSource = z.union([z.enum(["cli", "vscode", "exec", "mcp", "unknown"]), z.object({ custom: z.string() })]);
export const Thread = z.object({
  id: z.string(),
  sessionId: z.string(),
  forkedFromId: nullable(z.string()),
  parentThreadId: nullable(z.string()),
  preview: z.string(),
  ephemeral: z.boolean(),
  section: z.null(),
  sectionEnteredAt: z.null(),
  projectId: z.null(),
  historyMode: z.literal("legacy"),
  modelProvider: z.string(),
  model: nullable(z.string()),
  reasoningEffort: z.null(),
  createdAt: Seconds,
  updatedAt: Seconds,
  recencyAt: nullable(Seconds),
  status: ThreadStatus,
  path: z.null(),
  cwd: z.string(),
  cliVersion: z.string(),
  originator: nullable(z.string()),
  source: SessionSource,
  threadSource: z.null(),
  agentNickname: z.null(),
  agentRole: z.null(),
  gitInfo: z.null(),
  name: nullable(z.string()),
  turns: z.array(Turn),
});
export type Thread = z.infer<typeof Thread>;

/** What thread/start and thread/resume answer besides the thread: the session's settings. */
const sessionSettings = {
  model: z.string(),
  modelProvider: z.string(),
  serviceTier: z.null(),
  disabledPluginIds: z.array(z.string()),
  cwd: z.string(),
  instructionSources: z.array(z.string()),
  approvalPolicy: AskForApproval,
  approvalsReviewer: z.literal("user"),
  sandbox: SandboxPolicy,
  reasoningEffort: z.null(),
};

const sessionParams = {
  model: z.string().nullish(),
  modelProvider: z.string().nullish(),
  cwd: z.string().nullish(),
  approvalPolicy: AskForApproval.nullish(),
  sandbox: SandboxMode.nullish(),
  baseInstructions: z.string().nullish(),
  developerInstructions: z.string().nullish(),
};

export const Model = z.object({
  id: z.string(),
  model: z.string(),
  upgrade: z.null(),
  upgradeInfo: z.null(),
  availabilityNux: z.null(),
  displayName: z.string(),
  description: z.string(),
  modelSpecialty: z.null(),
  hidden: z.boolean(),
  supportedReasoningEfforts: z.array(z.object({ reasoningEffort: z.string(), description: z.string() })),
  defaultReasoningEffort: z.string(),
  inputModalities: z.array(z.enum(["text", "image"])),
  supportsPersonality: z.boolean(),
  multiAgentVersion: z.null(),
  additionalSpeedTiers: z.array(z.string()),
  serviceTiers: z.array(z.unknown()),
  defaultServiceTier: z.null(),
  availableAccessPrograms: z.null(),
  isDefault: z.boolean(),
});

export type Model = z.infer<typeof Model>;

const TokenUsageBreakdown = z.object({
  totalTokens: z.number().int(),
  inputTokens: z.number().int(),
  cachedInputTokens: z.number().int(),
  cacheWriteInputTokens: z.number().int(),
  outputTokens: z.number().int(),
  reasoningOutputTokens: z.number().int(),
});

export const CodexRequests = {
  initialize: {
    description: "Handshake. Answers who serves the session: Switchyard's user agent, its data directory and platform.",
    params: z.object({
      clientInfo: z.object({ name: z.string(), title: z.string().nullish(), version: z.string().nullish() }).passthrough(),
      capabilities: z.object({}).passthrough().nullish(),
    }),
    result: z.object({ userAgent: z.string(), codexHome: z.string(), platformFamily: z.string(), platformOs: z.string() }),
  },
  "account/read": {
    description: "No ChatGPT account: Switchyard calls model APIs with API keys it is configured with.",
    params: z.object({ refreshToken: z.boolean().nullish() }).passthrough(),
    result: z.object({ account: nullable(z.object({ type: z.literal("apiKey") })), userId: z.null(), requiresOpenaiAuth: z.boolean() }),
  },
  "config/read": {
    description: "The effective configuration, as far as Switchyard has one: the model and approval policy; the rest null.",
    params: z.object({ includeLayers: z.boolean().nullish(), cwd: z.string().nullish() }).passthrough(),
    result: z.object({
      config: z.record(z.string(), z.unknown()),
      origins: z.record(z.string(), z.unknown()),
      layers: z.null(),
    }),
  },
  "configRequirements/read": {
    description: "No administrator requirements.",
    params: z.object({}).passthrough(),
    result: z.object({ supportsIndependentSpeedModes: z.null(), requirements: z.null() }),
  },
  "skills/list": {
    description: "The skills of each workspace (all four sources), for the `$` picker.",
    params: z.object({ cwds: z.array(z.string()).nullish(), forceReload: z.boolean().nullish() }).passthrough(),
    result: z.object({
      data: z.array(
        z.object({
          cwd: z.string(),
          skills: z.array(
            z.object({
              name: z.string(),
              description: z.string(),
              path: z.string(),
              scope: z.enum(["user", "repo", "system", "admin"]),
              enabled: z.boolean(),
              pluginId: nullable(z.string()),
            }),
          ),
          errors: z.array(z.object({ path: z.string(), message: z.string() })),
        }),
      ),
    }),
  },
  "model/list": {
    description: "The models of the runtime's catalog.",
    params: z
      .object({ cursor: z.string().nullish(), limit: z.number().int().positive().nullish(), includeHidden: z.boolean().nullish() })
      .passthrough(),
    result: z.object({ data: z.array(Model), nextCursor: nullable(z.string()) }),
  },
  "thread/start": {
    description: "Starts a thread in `cwd`; thread/started follows.",
    params: z.object({ ...sessionParams, ephemeral: z.boolean().nullish() }).passthrough(),
    result: z.object({ thread: Thread, ...sessionSettings }),
  },
  "thread/resume": {
    description: "Loads a thread (any face's) to continue it, with its turns unless excludeTurns.",
    params: z.object({ threadId, ...sessionParams, excludeTurns: z.boolean().nullish() }).passthrough(),
    result: z.object({
      thread: Thread,
      ...sessionSettings,
      collaborationMode: z.null(),
      turnsBackwardsCursor: z.null(),
      itemsBackwardsCursor: z.null(),
    }),
  },
  "thread/fork": {
    description: "Copies a thread's history into a new thread.",
    params: z.object({ threadId, ...sessionParams }).passthrough(),
    result: z.object({ thread: Thread, ...sessionSettings }),
  },
  "thread/list": {
    description: "Threads, most recent first, from every face.",
    params: z
      .object({
        cursor: z.string().nullish(),
        limit: z.number().int().positive().nullish(),
        archived: z.boolean().nullish(),
        cwd: z.union([z.string(), z.array(z.string())]).nullish(),
        searchTerm: z.string().nullish(),
      })
      .passthrough(),
    result: z.object({ data: z.array(Thread), nextCursor: nullable(z.string()), backwardsCursor: z.null() }),
  },
  "thread/read": {
    description: "One thread, with its turns when includeTurns.",
    params: z.object({ threadId, includeTurns: z.boolean().nullish() }),
    result: z.object({ thread: Thread }),
  },
  "thread/archive": { description: "Archives a thread; thread/archived follows.", params: z.object({ threadId }), result: NoResult },
  "thread/unarchive": {
    description: "Brings an archived thread back; thread/unarchived follows.",
    params: z.object({ threadId }),
    result: z.object({ thread: Thread }),
  },
  "thread/name/set": {
    description: "Names a thread; thread/name/updated follows.",
    params: z.object({ threadId, name: z.string() }),
    result: NoResult,
  },
  "turn/start": {
    description: "Starts a turn with the user's input; its events follow.",
    params: z
      .object({
        threadId,
        input: z.array(UserInput).min(1),
        cwd: z.string().nullish(),
        model: z.string().nullish(),
        approvalPolicy: AskForApproval.nullish(),
        sandboxPolicy: SandboxPolicy.nullish(),
      })
      .passthrough(),
    result: z.object({ turn: Turn }),
  },
  "turn/steer": {
    description: "Adds input to the running turn.",
    params: z.object({ threadId, input: z.array(UserInput).min(1), expectedTurnId: z.string() }).passthrough(),
    result: z.object({ turnId: z.string() }),
  },
  "turn/interrupt": {
    description: "Stops the running turn; it ends `interrupted`.",
    params: z.object({ threadId, turnId: z.string() }),
    result: NoResult,
  },
} as const;
export type CodexMethod = keyof typeof CodexRequests;
export type CodexResult<M extends CodexMethod> = z.input<(typeof CodexRequests)[M]["result"]>;

const inTurn = { threadId: z.string(), turnId: z.string() };
const deltaParams = z.object({ ...inTurn, itemId: z.string(), delta: z.string() });

export const CodexNotifications = {
  "thread/started": z.object({ thread: Thread }).describe("A thread was started or forked."),
  "thread/name/updated": z.object({ threadId: z.string(), threadName: z.string().optional() }).describe("A thread was renamed."),
  "thread/archived": z.object({ threadId: z.string() }).describe("A thread was archived."),
  "thread/unarchived": z.object({ threadId: z.string() }).describe("A thread was unarchived."),
  "turn/started": z.object({ threadId: z.string(), turn: Turn }).describe("A turn began."),
  "turn/completed": z.object({ threadId: z.string(), turn: Turn }).describe("A turn ended, whatever the outcome (see turn.status)."),
  "turn/plan/updated": z
    .object({
      ...inTurn,
      explanation: nullable(z.string()),
      plan: z.array(z.object({ step: z.string(), status: z.enum(["pending", "inProgress", "completed"]) })),
    })
    .describe("The agent's plan for the turn, whole, each time it changes."),
  "item/started": z.object({ item: ThreadItem, ...inTurn, startedAtMs: z.number() }).describe("An item began."),
  "item/completed": z.object({ item: ThreadItem, ...inTurn, completedAtMs: z.number() }).describe("An item is final."),
  "item/agentMessage/delta": deltaParams.describe("A piece of the agent's message."),
  "item/reasoning/textDelta": deltaParams.extend({ contentIndex: z.number().int() }).describe("A piece of the model's reasoning."),
  "item/commandExecution/outputDelta": deltaParams.describe("A piece of a command's output."),
  "thread/tokenUsage/updated": z
    .object({
      ...inTurn,
      tokenUsage: z.object({ total: TokenUsageBreakdown, last: TokenUsageBreakdown, modelContextWindow: nullable(z.number()) }),
    })
    .describe("The tokens the thread has used."),
  error: z
    .object({
      error: z.object({ message: z.string(), codexErrorInfo: z.null(), additionalDetails: nullable(z.string()), misalignment: z.null() }),
      willRetry: z.boolean(),
      ...inTurn,
    })
    .describe("A turn failed; turn/completed (status failed) follows."),
} as const;
export type CodexNotificationMethod = keyof typeof CodexNotifications;
export type CodexNotification = {
  [M in CodexNotificationMethod]: { method: M; params: z.input<(typeof CodexNotifications)[M]> };
}[CodexNotificationMethod];

const approvalParams = { ...inTurn, itemId: z.string(), startedAtMs: z.number(), reason: z.string().nullish() };
export const CodexServerRequests = {
  "item/commandExecution/requestApproval": {
    description: "Asks the client before a command runs.",
    params: z.object({
      ...approvalParams,
      kind: z.literal("command"),
      environmentId: z.null(),
      command: z.string().nullish(),
      cwd: z.string().nullish(),
    }),
    result: z.object({ decision: z.union([z.enum(["accept", "acceptForSession", "decline", "cancel"]), z.object({}).passthrough()]) }),
  },
  "item/fileChange/requestApproval": {
    description: "Asks the client before a file changes.",
    params: z.object({ ...approvalParams, grantRoot: z.string().nullish() }),
    result: z.object({ decision: z.enum(["accept", "acceptForSession", "decline", "cancel"]) }),
  },
} as const;

export const codexProtocol = {
  name: "codex",
  title: "Codex app-server dialect",
  source: "src/faces/codex/protocol.ts",
  requests: CodexRequests,
  notifications: CodexNotifications,
  serverRequests: CodexServerRequests,
  objects: { Thread, Turn, ThreadItem, UserInput, ThreadStatus, AskForApproval, SandboxPolicy },
  notes: `
Chosen per connection: a client whose first request leaves out \`"jsonrpc"\` (as Codex's do) gets this face,
and is answered the same way; \`--face codex\` makes it the only face. Over WebSocket, at \`/\` as well as \`/ws\`.
Thread ids are UUIDs here (Codex's clients parse them so): \`thread_20261125_<12 hex>\` is written
\`20261125-0000-4000-8000-<12 hex>\`. See [docs/codex.md](../codex.md) for how Codex's clients connect.

**Not served.** Every other method of Codex 0.169.0's protocol is answered \`-32601\` (method not found), which
Codex's terminal UI tolerates. Among those it calls: \`hooks/list\`, \`collaborationMode/list\`,
\`thread/loaded/list\`, \`thread/goal/get\`, \`plugin/installed\`, \`experimentalFeature/list\` and
\`account/bedrock/checkGovCloudRequirements\`. Also not served: sign-in (\`account/login/*\`, \`account/logout\`),
\`command/exec\`, \`fs/*\`, \`review/start\`, realtime, thread sections, goals and attachments, and the
\`item/tool/requestUserInput\`, \`item/permissions/requestApproval\` and \`mcpServer/elicitation/request\` server requests.
`,
} satisfies ProtocolTable;
