// AgentCraft daemon protocol (spec 003): its objects (templates, instances, domain components,
// session leases) and every RPC method, declared once. The daemon validates with these tables;
// `switchyard schema` exports them.
import { z } from "zod";
import type { ProtocolTable } from "../../rpc/protocol-table.js";

const name = z.string().min(1).max(100);
/** Instance names become directory names: no separators, no dot-names. */
const instanceName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '_' and '-', starting with a letter or digit");

export const LaunchMode = z.enum(["direct", "acp-background", "acp-service", "one-shot"]);
export const WorkspacePolicy = z.enum(["persistent", "ephemeral"]);
export const AgentStatus = z.enum(["created", "starting", "running", "stopping", "stopped", "error", "crashed"]);
export const BackendType = z.enum(["switchyard", "claude-code", "codex", "custom", "cursor"]);
export type LaunchMode = z.infer<typeof LaunchMode>;
export type AgentStatus = z.infer<typeof AgentStatus>;
export type BackendType = z.infer<typeof BackendType>;

export const McpServerRef = z.object({
  name,
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
});

export const BackendConfig = z
  .object({
    executablePath: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    model: z.string().optional(),
    env: z.record(z.string(), z.string()).optional(),
  })
  .catchall(z.unknown());

export const AgentTemplate = z
  .object({
    name,
    version: z.string().regex(/^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/, "a semantic version x.y.z"),
    description: z.string().optional(),
    backend: z.object({ type: BackendType, config: BackendConfig.optional() }).default({ type: "switchyard" }),
    provider: z
      .object({
        type: z.string().min(1).describe("anthropic | openai | openai-chat | ollama | custom (custom: an OpenAI-compatible baseUrl)"),
        config: z.object({ model: z.string().optional(), baseUrl: z.string().url().optional() }).catchall(z.unknown()).optional(),
      })
      .optional(),
    domainContext: z
      .object({
        skills: z.array(z.string()).default([]),
        prompts: z.array(z.string()).default([]),
        mcpServers: z.array(z.union([McpServerRef, z.string().min(1)])).default([]),
        workflow: z.string().optional(),
        plugins: z.array(z.string()).default([]),
        subAgents: z.array(z.string()).default([]),
      })
      .default({ skills: [], prompts: [], mcpServers: [], plugins: [], subAgents: [] }),
    launchMode: LaunchMode.optional(),
    workspacePolicy: WorkspacePolicy.optional(),
    initializer: z
      .object({ steps: z.array(z.object({ type: z.string(), config: z.record(z.string(), z.unknown()).optional() })).min(1) })
      .optional(),
    schedule: z.record(z.string(), z.unknown()).optional(),
    metadata: z.record(z.string(), z.string()).optional(),
  })
  .describe("An agent template: what an instance is made from.");
export type AgentTemplate = z.output<typeof AgentTemplate>;

export const AgentInstanceMeta = z
  .object({
    id: z.string(),
    name: z.string(),
    templateName: z.string(),
    templateVersion: z.string(),
    backendType: BackendType,
    backendConfig: BackendConfig.optional(),
    status: AgentStatus,
    launchMode: LaunchMode,
    workspacePolicy: WorkspacePolicy,
    processOwnership: z.enum(["managed", "external"]).optional(),
    createdAt: z.string(),
    updatedAt: z.string(),
    pid: z.number().int().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    workspaceDir: z.string().describe("Switchyard: the instance's workspace (its directory, or the workDir it links to)."),
    threadId: z.string().optional().describe("Switchyard: the runtime thread of the agent's main session, visible from every face."),
    lastError: z.string().optional(),
    agentCapabilities: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("Switchyard: the running agent's ACP capabilities, as it gave them at initialize (the lease proxy answers with them)."),
  })
  .describe("An agent instance, stored as .agentcraft.json in its workspace.");
export type AgentInstanceMeta = z.infer<typeof AgentInstanceMeta>;

export const SkillDefinition = z.object({
  name,
  description: z.string().optional(),
  content: z.string(),
  tags: z.array(z.string()).optional(),
});
export const PromptDefinition = z.object({
  name,
  description: z.string().optional(),
  content: z.string(),
  variables: z.array(z.string()).optional(),
});
export const McpServerDefinition = McpServerRef.extend({ description: z.string().optional() });
export const WorkflowDefinition = z.object({ name, description: z.string().optional(), content: z.string() });

export const SessionLeaseInfo = z.object({
  sessionId: z.string(),
  agentName: z.string(),
  clientId: z.string().nullable(),
  state: z.enum(["active", "idle", "expired"]),
  createdAt: z.string(),
  lastActivityAt: z.string(),
  idleTtlMs: z.number(),
});
export type SessionLeaseInfo = z.infer<typeof SessionLeaseInfo>;

const Overrides = z.object({
  launchMode: LaunchMode.optional(),
  workspacePolicy: WorkspacePolicy.optional(),
  metadata: z.record(z.string(), z.string()).optional(),
});
const CreateOverrides = Overrides.extend({
  workDir: z
    .string()
    .refine((p) => p.startsWith("/"), "an absolute path")
    .optional(),
  workDirConflict: z.enum(["error", "overwrite", "append"]).optional(),
});

const Named = z.object({ name });
const Empty = z.object({}).passthrough();
const Ok = z.object({ ok: z.boolean() });
const Success = z.object({ success: z.boolean() });

const RunOptions = z.object({
  systemPromptFile: z.string().optional(),
  appendSystemPrompt: z.string().optional(),
  sessionId: z.string().optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxTurns: z.number().int().positive().optional(),
  model: z.string().optional(),
});
/** agent.run has two forms, told apart by their params: print mode on an instance, or an ephemeral run of a template. */
export const RunOnInstance = z.object({ name: instanceName, prompt: z.string().min(1), options: RunOptions.optional() });
export const RunOfTemplate = z.object({ template: name, prompt: z.string().min(1), cleanup: z.boolean().optional() });
export type RunOptions = z.infer<typeof RunOptions>;

const ValidationError = z.object({ path: z.string(), message: z.string() });

export const AgentCraftRequests = {
  "template.list": { params: Empty, result: z.array(AgentTemplate), description: "Every loaded template." },
  "template.get": { params: Named, result: AgentTemplate, description: "One template by name." },
  "template.load": {
    params: z.object({ filePath: z.string().min(1) }),
    result: AgentTemplate,
    description: "Validates a template file and loads it (kept in configs/templates).",
  },
  "template.unload": { params: Named, result: Success, description: "Forgets a template (and its copy in configs/templates)." },
  "template.validate": {
    params: z.object({ filePath: z.string().min(1) }),
    result: z.object({ valid: z.boolean(), template: AgentTemplate.optional(), errors: z.array(ValidationError).optional() }),
    description: "Checks a template file: the template, or every problem with its path.",
  },
  "agent.create": {
    params: z.object({ name: instanceName, template: name, overrides: CreateOverrides.optional() }),
    result: AgentInstanceMeta,
    description: "Creates an instance from a template: its workspace, context files and .agentcraft.json.",
  },
  "agent.start": {
    params: z.object({ name: instanceName }),
    result: AgentInstanceMeta,
    description: "Starts the instance's agent (its main session, a runtime thread) under the daemon.",
  },
  "agent.stop": {
    params: z.object({ name: instanceName }),
    result: AgentInstanceMeta,
    description: "Stops a started agent (its leased sessions end); an attached one is only marked stopped.",
  },
  "agent.destroy": {
    params: z.object({ name: instanceName, force: z.boolean().optional() }),
    result: Success,
    description: "Removes the instance and what AgentCraft wrote for it (force: also a running or corrupted one).",
  },
  "agent.status": { params: z.object({ name: instanceName }), result: AgentInstanceMeta, description: "The instance's metadata." },
  "agent.list": { params: Empty, result: z.array(AgentInstanceMeta), description: "Every instance's metadata." },
  "agent.resolve": {
    params: z.object({ name: instanceName, template: name.optional(), overrides: Overrides.optional() }),
    result: z.object({
      instanceName: z.string(),
      workspaceDir: z.string(),
      backendType: BackendType,
      command: z.string(),
      args: z.array(z.string()),
      env: z.record(z.string(), z.string()),
      created: z.boolean(),
    }),
    description: "Everything needed to spawn the agent (an ACP command), without starting it.",
  },
  "agent.attach": {
    params: z.object({ name: instanceName, pid: z.number().int().positive(), metadata: z.record(z.string(), z.string()).optional() }),
    result: AgentInstanceMeta,
    description: "Registers a process a client spawned for the instance; it is watched, and crashed if it dies undetached.",
  },
  "agent.detach": {
    params: z.object({ name: instanceName, cleanup: z.boolean().optional() }),
    result: z.object({ ok: z.boolean(), workspaceCleaned: z.boolean() }),
    description: "The client stopped its process (cleanup: remove an ephemeral workspace).",
  },
  "agent.run": {
    params: z.union([RunOnInstance, RunOfTemplate]),
    result: z.union([
      z.object({ text: z.string(), sessionId: z.string().optional() }),
      z.object({ response: z.string(), instanceName: z.string(), artifacts: z.array(z.string()) }),
    ]),
    description: "{name, prompt, options}: one prompt on an instance; {template, prompt, cleanup}: an ephemeral instance runs it.",
  },
  "agent.prompt": {
    params: z.object({ name: instanceName, message: z.string().min(1), sessionId: z.string().optional() }),
    result: z.object({ response: z.string(), sessionId: z.string() }),
    description: "A message to a started agent, on its session (or the session given).",
  },
  "skill.list": { params: Empty, result: z.array(SkillDefinition), description: "Every loaded skill." },
  "skill.get": { params: Named, result: SkillDefinition, description: "One skill (CONFIG_NOT_FOUND is -32000)." },
  "prompt.list": { params: Empty, result: z.array(PromptDefinition), description: "Every loaded prompt." },
  "prompt.get": { params: Named, result: PromptDefinition, description: "One prompt." },
  "mcp.list": { params: Empty, result: z.array(McpServerDefinition), description: "Every loaded MCP server definition." },
  "mcp.get": { params: Named, result: McpServerDefinition, description: "One MCP server definition." },
  "workflow.list": { params: Empty, result: z.array(WorkflowDefinition), description: "Every loaded workflow." },
  "workflow.get": { params: Named, result: WorkflowDefinition, description: "One workflow." },
  "session.create": {
    params: z.object({ agentName: instanceName, clientId: z.string().min(1), idleTtlMs: z.number().int().positive().optional() }),
    result: SessionLeaseInfo,
    description: "Leases a new session of a started agent to this connection.",
  },
  "session.prompt": {
    params: z.object({ sessionId: z.string(), text: z.string().min(1) }),
    result: z.object({ response: z.string(), stopReason: z.string() }),
    description: "Runs a prompt; the session's ACP updates arrive as session.update notifications meanwhile.",
  },
  "session.cancel": { params: z.object({ sessionId: z.string() }), result: Ok, description: "Interrupts the session's running prompt." },
  "session.close": { params: z.object({ sessionId: z.string() }), result: Ok, description: "Ends the lease and its agent process." },
  "session.list": {
    params: z.object({ agentName: instanceName.optional() }),
    result: z.array(SessionLeaseInfo),
    description: "Leases, of one agent or all.",
  },
  "proxy.connect": {
    params: z.object({ agentName: instanceName, envPassthrough: z.boolean().optional() }),
    result: z.object({ sessionId: z.string(), agentName: z.string() }),
    description: "Legacy: opens a proxy session on a started agent.",
  },
  "proxy.disconnect": { params: z.object({ sessionId: z.string() }), result: Ok, description: "Legacy: closes a proxy session." },
  "proxy.forward": {
    params: z.object({ sessionId: z.string(), acpMessage: z.record(z.string(), z.unknown()) }),
    result: z.record(z.string(), z.unknown()),
    description: "Legacy: session/prompt and session/cancel messages, answered as ACP responses.",
  },
  "proxy.envCallback": {
    params: z.object({ sessionId: z.string(), response: z.unknown() }),
    result: Ok,
    description: "Legacy, not implemented: environment passthrough.",
  },
  "daemon.ping": {
    params: Empty,
    result: z.object({ version: z.string(), uptime: z.number(), agents: z.number() }),
    description: "Version, uptime in seconds and how many agents run.",
  },
  "daemon.shutdown": {
    params: Empty,
    result: Success,
    description: "Stops the daemon: managed agents stop, the socket and daemon.pid go.",
  },
} as const;

export const AgentCraftNotifications = {
  "session.update": z
    .object({ sessionId: z.string(), update: z.record(z.string(), z.unknown()) })
    .describe("An ACP session/update of a leased session, sent to the connection holding the lease."),
} as const;

export const AgentCraftServerRequests = {
  "session.requestPermission": {
    params: z.object({
      sessionId: z.string(),
      toolCall: z.record(z.string(), z.unknown()),
      options: z.array(z.record(z.string(), z.unknown())),
    }),
    result: z.object({ outcome: z.record(z.string(), z.unknown()) }),
    description: "An approval of a leased session's turn, in ACP's session/request_permission shape.",
  },
} as const;

export const agentCraftProtocol: ProtocolTable = {
  name: "agentcraft",
  title: "AgentCraft daemon protocol",
  source: "src/faces/agentcraft/protocol.ts",
  requests: AgentCraftRequests,
  notifications: AgentCraftNotifications,
  serverRequests: AgentCraftServerRequests,
  objects: {
    AgentTemplate,
    AgentInstanceMeta,
    SessionLeaseInfo,
    SkillDefinition,
    PromptDefinition,
    McpServerDefinition,
    WorkflowDefinition,
  },
};
