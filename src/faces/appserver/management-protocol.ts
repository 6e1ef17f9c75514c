// AppServer protocol, the management families: skills and custom commands of a workspace. Part
// of the one table (protocol.ts spreads these in). Every method takes an optional
// `workspacePath`; without it, the server's own workspace (the directory it was started in).
import { z } from "zod";

/** An object of the core table by its id (that table spreads this one in, so it cannot be imported here). */
const withId = (what: string) => z.object({ id: z.string() }).passthrough().describe(`The ${what} (the same object as elsewhere).`);

const workspacePath = z
  .string()
  .min(1)
  .optional()
  .describe("The workspace; default: the directory the server was started in (a DotCraft server serves one workspace).");
const skillName = z.string().min(1).describe("The skill's name (its folder's name).");

export const SkillInfo = z
  .object({
    name: z.string(),
    description: z.string().describe("From the front matter's description; the name when it has none."),
    source: z.enum(["workspace", "plugin", "builtin", "user"]),
    available: z.boolean().describe("False when a requirement of the front matter (bins, env) is not met here."),
    unavailableReason: z.string().nullable(),
    enabled: z.boolean(),
    path: z.string().describe("The source SKILL.md."),
    hasVariant: z.boolean().optional().describe("True when the agent sees the workspace's variant of the skill."),
    pluginId: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).describe("The SKILL.md front matter."),
  })
  .describe("A skill: a folder with a SKILL.md that teaches the agent a task.");

export const CommandInfo = z
  .object({
    name: z.string().describe('The slash name, e.g. "/review".'),
    aliases: z.array(z.string()),
    descriptionKey: z.string().describe("A key for the client's own translation; empty for custom commands."),
    fallbackDescription: z.string(),
    description: z.string(),
    category: z.enum(["builtin", "custom"]),
    requiresAdmin: z.boolean(),
    argumentHint: z.string().optional(),
    source: z.enum(["workspace", "user"]).optional(),
    path: z.string().optional(),
  })
  .describe("A slash command: built in (/new, /stop) or a custom prompt template.");

const SkillResult = z.object({ skill: SkillInfo });

const stringMap = z.record(z.string(), z.string());
export const McpServerConfig = z
  .object({
    name: z.string().min(1).describe("The key; compared without case."),
    enabled: z.boolean(),
    transport: z.enum(["stdio", "streamableHttp"]),
    command: z.string().optional(),
    args: z.array(z.string()).optional(),
    env: stringMap.optional(),
    envVars: z.array(z.string()).optional().describe("Variables passed on from the server's own environment."),
    cwd: z.string().nullable().optional().describe("Relative to the workspace."),
    url: z.string().optional(),
    bearerTokenEnvVar: z.string().nullable().optional(),
    httpHeaders: stringMap.optional(),
    envHttpHeaders: stringMap.optional().describe("Header name -> the variable holding its value."),
    startupTimeoutSec: z.number().positive().nullable().optional(),
    toolTimeoutSec: z.number().positive().nullable().optional(),
    origin: z
      .object({ kind: z.enum(["workspace", "plugin"]) })
      .passthrough()
      .optional()
      .describe("Set by the server; ignored in mcp/upsert."),
    readOnly: z.boolean().optional().describe("Set by the server; ignored in mcp/upsert."),
  })
  .describe(
    "An MCP server: stdio (command, args, env, envVars, cwd) or Streamable HTTP (url, bearerTokenEnvVar, httpHeaders, envHttpHeaders).",
  );

export const McpServerStatus = z
  .object({
    name: z.string(),
    enabled: z.boolean(),
    startupState: z.enum(["starting", "ready", "failed", "disabled", "stopped"]),
    toolCount: z.number().int(),
    resourceCount: z.number().int(),
    resourceTemplateCount: z.number().int(),
    lastError: z.string().nullable(),
    transport: z.enum(["stdio", "streamableHttp"]),
    nextRetryAt: z.string().optional().describe("While failed: when the server is tried again (backoff up to 30 s)."),
  })
  .describe("An MCP server's runtime state.");

const nullableInt = z.number().int().nullable();
export const CronJobInfo = z
  .object({
    id: z.string().describe("8 hex characters."),
    name: z.string(),
    threadId: z.string().describe("The thread the prompt runs on."),
    prompt: z.string(),
    schedule: z.object({
      kind: z.enum(["every", "at", "daily", "cron"]),
      everyMs: nullableInt.optional(),
      atMs: nullableInt.optional(),
      initialDelayMs: nullableInt.optional(),
      dailyHour: nullableInt.optional(),
      dailyMinute: nullableInt.optional(),
      tz: z.string().nullable().optional().describe("IANA time zone of daily and cron schedules; UTC when absent."),
      expr: z.string().nullable().optional().describe("The cron expression of kind cron."),
    }),
    enabled: z.boolean(),
    createdAtMs: z.number().int(),
    deleteAfterRun: z.boolean(),
    source: z.enum(["agent", "config"]).optional().describe("Who made it: the agent, or the workspace's .craft/config.json (cron.jobs)."),
    state: z.object({
      nextRunAtMs: nullableInt,
      lastRunAtMs: nullableInt,
      lastStatus: z.enum(["ok", "error"]).nullable(),
      lastError: z.string().nullable(),
      lastThreadId: z.string().nullable(),
      lastResult: z.string().nullable().describe("The agent's answer of the last run, cut at 500 characters."),
    }),
  })
  .describe("A scheduled prompt: run as a turn on its thread when due.");

export const SubAgentDefinition = z
  .object({
    runtime: z.literal("native").describe("Switchyard's own engine (the only runtime of this version)."),
    description: z.string(),
    systemPrompt: z.string().optional().describe("Instructions given with every task."),
    model: z.string().optional(),
    provider: z.string().optional(),
    tools: z.array(z.string()).optional().describe("The tools it is offered, by name; all of the parent's when absent."),
  })
  .describe("What a subagent is.");

export const SubAgentProfileEntry = z
  .object({
    name: z.string(),
    isBuiltIn: z.boolean(),
    isTemplate: z.boolean(),
    hasWorkspaceOverride: z.boolean(),
    isDefault: z.boolean(),
    enabled: z.boolean(),
    definition: SubAgentDefinition,
    builtInDefaults: SubAgentDefinition.optional(),
    diagnostic: z.object({
      enabled: z.boolean(),
      binaryResolved: z.boolean(),
      hiddenFromPrompt: z.boolean(),
      warnings: z.array(z.string()),
    }),
  })
  .describe("A subagent profile: built in (general, explorer) or the workspace's.");

const profileName = z.string().min(1);

const WorkspaceConfig = z.object({
  providerId: z.string().nullable().describe("The provider of threads that name none (null: the server's)."),
  model: z.string().nullable().describe("The model of threads that name none (null: the provider's default)."),
  defaultApprovalPolicy: z.enum(["default", "autoApprove"]).nullable().describe("The approval policy of threads that set none."),
});

export const ExternalChannelConfig = z
  .object({
    name: z.string().min(1).describe("The key; compared without case."),
    enabled: z.boolean(),
    transport: z.enum(["subprocess", "websocket", "managedWebsocket", "webhook"]),
    command: z.string().optional(),
    builtinModule: z.string().optional(),
    args: z.array(z.string()).optional(),
    workingDirectory: z.string().nullable().optional(),
    env: z.record(z.string(), z.string()).optional(),
    port: z.number().int().optional().describe("webhook: the loopback port its messages come in on."),
    outboundUrl: z.string().optional().describe("webhook: where the agent's replies are POSTed."),
    secretEnvVar: z.string().nullable().optional().describe("webhook: the variable holding the bearer token of incoming messages."),
  })
  .describe(
    "An external channel: an adapter started by others (subprocess, websocket, managedWebsocket) or Switchyard's own HTTP webhook channel.",
  );

export const PluginInfo = z
  .object({
    id: z.string(),
    displayName: z.string(),
    description: z.string(),
    enabled: z.boolean(),
    installed: z.boolean(),
    installable: z.boolean().describe("A built-in catalog plugin not installed in the workspace."),
    removable: z.boolean().describe("Installed from the built-in catalog (its folder carries a .builtin marker)."),
    source: z.enum(["workspace", "user", "builtin"]),
    version: z.string().optional(),
    interface: z.record(z.string(), z.unknown()).optional(),
    functions: z.array(z.object({ name: z.string(), description: z.string() })),
    skills: z.array(z.object({ name: z.string(), enabled: z.boolean() })),
    apps: z.array(z.unknown()),
    mcpServers: z.array(z.unknown()),
  })
  .describe("A plugin: functions the model can call (pluginFunctionCall items) and skills.");
const PluginResult = z.object({ plugin: PluginInfo });
const pluginId = z.string().min(1);

export const ManagementRequests = {
  "plugin/list": {
    description: "Lists the installed plugins (workspace, user) and the built-in catalog's installable ones.",
    params: z.object({ workspacePath, includeDisabled: z.boolean().optional().describe("Default true.") }),
    result: z.object({ plugins: z.array(PluginInfo), diagnostics: z.array(z.unknown()) }),
  },
  "plugin/view": {
    description: "One plugin by id (-32041 when there is none).",
    params: z.object({ workspacePath, id: pluginId }),
    result: PluginResult,
  },
  "plugin/install": {
    description: "Copies a built-in catalog plugin into .craft/plugins/<id> (with a .builtin marker) and enables it.",
    params: z.object({ workspacePath, id: pluginId }),
    result: PluginResult,
  },
  "plugin/remove": {
    description: "Deletes a plugin installed from the built-in catalog; a user-made plugin folder is refused (-32602).",
    params: z.object({ workspacePath, id: pluginId }),
    result: PluginResult,
  },
  "plugin/setEnabled": {
    description: "Enables or disables an installed plugin for the workspace (its functions and skills).",
    params: z.object({ workspacePath, id: pluginId, enabled: z.boolean() }),
    result: PluginResult,
  },
  "externalChannel/list": {
    description: "Lists the workspace's external channels (.craft/config.json externalChannels).",
    params: z.object({ workspacePath }),
    result: z.object({ channels: z.array(ExternalChannelConfig) }),
  },
  "externalChannel/get": {
    description: "One external channel by name (-32080 when there is none).",
    params: z.object({ workspacePath, name: z.string().min(1) }),
    result: z.object({ channel: ExternalChannelConfig }),
  },
  "externalChannel/upsert": {
    description:
      "Creates or replaces an external channel (-32081 when invalid for its transport, -32082 when its name clashes with another or a reserved one); a webhook channel of the server's workspace starts or restarts.",
    params: z.object({ workspacePath, channel: ExternalChannelConfig }),
    result: z.object({ channel: ExternalChannelConfig }),
  },
  "externalChannel/remove": {
    description: "Removes an external channel (-32080 when there is none); a running webhook channel stops.",
    params: z.object({ workspacePath, name: z.string().min(1) }),
    result: z.object({ removed: z.literal(true) }),
  },
  "workspace/config/schema": {
    description: "The workspace settings workspace/config/update can change, and when a change takes effect.",
    params: z.object({}),
    result: z.object({
      sections: z.array(
        z.object({
          section: z.string(),
          order: z.number().int(),
          path: z.string().nullable(),
          fields: z.array(z.object({ key: z.string(), type: z.string(), reload: z.string() })),
        }),
      ),
    }),
  },
  "workspace/config/update": {
    description:
      "Changes the workspace's defaults for its threads (.craft/config.json): a value sets, null removes; at least one is needed. A thread's own configuration still wins; running turns are not changed.",
    params: z.object({
      workspacePath,
      providerId: z.string().nullable().optional(),
      model: z.string().nullable().optional().describe('null, "" or "Default" removes it.'),
      defaultApprovalPolicy: z.enum(["default", "autoApprove"]).nullable().optional(),
    }),
    result: WorkspaceConfig,
  },
  "subagent/profiles/list": {
    description: "Lists the subagent profiles the agent can hand tasks to (run_subagent): the built-in ones and the workspace's.",
    params: z.object({ workspacePath }),
    result: z.object({
      defaultName: z.string(),
      settings: z.object({ model: z.string().nullable().describe("The model of subagents whose profile names none.") }),
      profiles: z.array(SubAgentProfileEntry),
    }),
  },
  "subagent/profiles/upsert": {
    description: "Creates or replaces a workspace profile, or overrides a built-in one (-32084 when invalid).",
    params: z.object({ workspacePath, name: profileName, definition: SubAgentDefinition }),
    result: SubAgentProfileEntry,
  },
  "subagent/profiles/setEnabled": {
    description: "Enables or disables a profile for the workspace; the default profile cannot be disabled (-32085).",
    params: z.object({ workspacePath, name: profileName, enabled: z.boolean() }),
    result: SubAgentProfileEntry,
  },
  "subagent/profiles/remove": {
    description: "Removes a workspace profile, or the workspace's override of a built-in one (-32083 when there is none).",
    params: z.object({ workspacePath, name: profileName }),
    result: z.object({ removed: z.literal(true) }),
  },
  "subagent/settings/update": {
    description: "Sets (or, with null, clears) the workspace's model for subagents whose profile names none.",
    params: z.object({ workspacePath, model: z.string().nullable().optional() }),
    result: z.object({ model: z.string().nullable() }),
  },
  "cron/list": {
    description: "Lists the scheduled prompts (the enabled ones unless includeDisabled).",
    params: z.object({ includeDisabled: z.boolean().optional() }),
    result: z.object({ jobs: z.array(CronJobInfo) }),
  },
  "cron/remove": {
    description: "Removes a scheduled prompt (-32031 when there is none).",
    params: z.object({ jobId: z.string().min(1) }),
    result: z.object({ removed: z.literal(true) }),
  },
  "cron/enable": {
    description: "Pauses or resumes a scheduled prompt; resuming keeps a future slot, and computes a past or missing one afresh.",
    params: z.object({ jobId: z.string().min(1), enabled: z.boolean() }),
    result: z.object({ job: CronJobInfo }),
  },
  "cron/run": {
    description: "Runs a scheduled prompt once now (enabled or not); its state changes when the run ends.",
    params: z.object({ jobId: z.string().min(1) }),
    result: z.object({ queued: z.literal(true), job: CronJobInfo }),
  },
  "heartbeat/trigger": {
    description:
      "Runs the workspace heartbeat (the prompt in HEARTBEAT.md) now on its heartbeat thread and answers when it has run: result is null when there is no HEARTBEAT.md.",
    params: z.object({ workspacePath }),
    result: z.object({ result: z.string().nullable(), error: z.string().nullable(), threadId: z.string().optional() }),
  },
  "skills/list": {
    description: "Lists the workspace's skills from every source (workspace, plugins, system, user), the highest-priority one per name.",
    params: z.object({ workspacePath, includeUnavailable: z.boolean().optional().describe("Default true.") }),
    result: z.object({ skills: z.array(SkillInfo) }),
  },
  "skills/read": {
    description: "Reads a skill's source SKILL.md as written, with its parsed front matter (-32040 when there is no such skill).",
    params: z.object({ workspacePath, name: skillName }),
    result: z.object({ name: z.string(), content: z.string(), metadata: z.record(z.string(), z.unknown()).nullable() }),
  },
  "skills/view": {
    description: "The skill as the agent reads it: the workspace variant's body if there is one, else the source's, without front matter.",
    params: z.object({ workspacePath, name: skillName }),
    result: z.object({ name: z.string(), content: z.string() }),
  },
  "skills/restoreOriginal": {
    description: "Makes the agent read the source skill again instead of the workspace's variant (kept on disk, marked restored).",
    params: z.object({ workspacePath, name: skillName }),
    result: z.object({ name: z.string(), restored: z.boolean().describe("False when the skill already used its source.") }),
  },
  "skills/setEnabled": {
    description: "Enables or disables a skill for the workspace (.craft/config.json); disabled skills are not offered to the agent.",
    params: z.object({ workspacePath, name: skillName, enabled: z.boolean() }),
    result: SkillResult,
  },
  "skills/uninstall": {
    description: "Deletes a workspace or user skill and its workspace variant; system and plugin skills are refused (-32602).",
    params: z.object({ workspacePath, name: skillName }),
    result: z.object({
      name: z.string(),
      uninstalled: z.boolean(),
      source: z.enum(["workspace", "user"]),
      removedSourcePath: z.string(),
      removedVariantCount: z.number().int(),
    }),
  },
  "mcp/list": {
    description: "Lists the workspace's MCP servers (.craft/config.json mcp.servers).",
    params: z.object({ workspacePath }),
    result: z.object({ servers: z.array(McpServerConfig) }),
  },
  "mcp/get": {
    description: "One MCP server by name (-32070 when there is none).",
    params: z.object({ workspacePath, name: z.string().min(1) }),
    result: z.object({ server: McpServerConfig }),
  },
  "mcp/upsert": {
    description:
      "Creates or replaces an MCP server and (re)connects it; -32072 when the configuration is invalid for its transport, -32074 when the name differs only in case from another's.",
    params: z.object({ workspacePath, server: McpServerConfig }),
    result: z.object({ server: McpServerConfig }),
  },
  "mcp/remove": {
    description: "Removes an MCP server and disconnects it (-32070 when there is none).",
    params: z.object({ workspacePath, name: z.string().min(1) }),
    result: z.object({ removed: z.literal(true) }),
  },
  "mcp/status/list": {
    description: "The runtime state of each MCP server of the workspace (starting them, if the workspace was not in use yet).",
    params: z.object({ workspacePath }),
    result: z.object({ servers: z.array(McpServerStatus) }),
  },
  "mcp/test": {
    description:
      "Connects to a configuration without saving it and counts its tools; a failure is a result (success: false), not an error.",
    params: z.object({ workspacePath, server: McpServerConfig }),
    result: z.object({
      success: z.boolean(),
      toolCount: z.number().int().optional(),
      errorCode: z.string().optional(),
      errorMessage: z.string().optional(),
    }),
  },
  "command/list": {
    description:
      "Lists the slash commands: the built-in ones (unless includeBuiltins is false) and the workspace's and user's custom ones.",
    params: z.object({
      workspacePath,
      includeBuiltins: z.boolean().optional().describe("Default true; false lists only custom commands (those a commandRef can name)."),
      language: z.string().optional().describe("Ignored (kept for older clients)."),
    }),
    result: z.object({ commands: z.array(CommandInfo) }),
  },
  "command/execute": {
    description:
      "Runs a slash command on a thread: /new starts a thread, /stop interrupts the running turn, a custom command becomes the thread's next input (started now, or queued behind the running turn). -32060 when there is no such command.",
    params: z.object({
      threadId: z.string().min(1),
      command: z.string().min(1).describe('The command, e.g. "/review" or "/review src/a.ts".'),
      arguments: z.array(z.string()).optional().describe("The arguments; default: those written after the command."),
      sender: z.record(z.string(), z.unknown()).optional().describe("Who runs it (accepted, for auditing by clients)."),
    }),
    result: z.object({
      handled: z.boolean(),
      message: z.string().optional(),
      isMarkdown: z.boolean(),
      expandedPrompt: z.string().nullable().describe("The prompt a custom command expanded to."),
      sessionReset: z.boolean().describe("/new: switch to `thread`."),
      thread: withId("Thread").optional(),
      turn: withId("Turn").optional(),
      queuedInput: withId("QueuedInput").optional(),
    }),
  },
} as const;

export const ManagementNotifications = {
  "cron/stateChanged": z
    .object({ job: CronJobInfo, removed: z.boolean() })
    .describe("A scheduled prompt was made, changed, ran or was removed (sent to every connection)."),
  "system/jobResult": z
    .object({
      source: z.enum(["cron", "heartbeat"]),
      jobId: z.string().optional(),
      threadId: z.string(),
      turnId: z.string().optional(),
      result: z.string().nullable(),
      error: z.string().nullable(),
    })
    .describe("A scheduled prompt or the heartbeat ran: the agent's answer (sent to every connection)."),
  "mcp/status/updated": z
    .object({ server: McpServerStatus, workspacePath: z.string() })
    .describe("An MCP server's runtime state changed (sent to every connection)."),
  "workspace/configChanged": z
    .object({
      source: z.string().describe('The request that made the change, e.g. "skills/setEnabled".'),
      regions: z.array(z.string()).describe('What changed, e.g. ["skills"]; re-read it.'),
      changedAt: z.string(),
      workspacePath: z.string(),
    })
    .describe(
      "A workspace's skills, commands or settings changed (sent to every connection that did not initialize with configChange: false).",
    ),
} as const;
