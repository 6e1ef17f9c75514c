// The built-in backend: Switchyard's own agent loop (model provider + tool registry).
import { lookupModel } from "../../providers/catalog.js";
import type { ModelProvider } from "../../providers/provider.js";
import { callUsage } from "../../providers/usage.js";
import type { ToolRegistry } from "../../tools/registry.js";
import { Workspace } from "../../tools/workspace.js";
import { askUserTool } from "../../tools/ask-user.js";
import { LOAD_SKILL } from "../../tools/load-skill.js";
import type { AnyTool } from "../../tools/tool.js";
import { clientTool } from "../../tools/client-tool.js";
import type { WorkspaceResources } from "../../workspace/index.js";
import type { AgentBackend, TurnContext, TurnOutcome } from "../backend.js";
import { historyFromClientMessages, rebuildHistory, type RebuiltHistory } from "./history.js";
import { projectInstructions, skillCatalog, systemPrompt } from "./system-prompt.js";
import { TurnRunner } from "./turn-runner.js";
import { userMessage, type InputRefs } from "./user-input.js";

export type ProviderResolution = ModelProvider | { problem: string };

export interface BuiltinBackendOptions {
  tools: ToolRegistry;
  /** Finds the model provider for a thread's or turn's selection. */
  resolveProvider(selection: { provider?: string; model?: string }): ProviderResolution | Promise<ProviderResolution>;
  defaults: { provider?: string; model?: string; commandTimeoutMs: number };
  /** The workspaces' skills and custom commands (the catalog in the prompt, skillRef, commandRef). */
  workspace?: Pick<WorkspaceResources, "skills" | "commands" | "mcp" | "defaults" | "plugins">;
}

export class BuiltinBackend implements AgentBackend {
  readonly type = "builtin";

  constructor(private readonly options: BuiltinBackendOptions) {}

  async runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    const { thread, recorder } = ctx;
    const config = thread.configuration ?? {};
    const workspaceDefaults = this.options.workspace?.defaults.read(thread.workspacePath) ?? {};
    const requested = ctx.model ?? config.model ?? workspaceDefaults.model ?? this.options.defaults.model;
    const provider = await this.options.resolveProvider({
      provider: ctx.provider ?? config.provider ?? workspaceDefaults.provider ?? this.options.defaults.provider,
      model: requested,
    });
    if ("problem" in provider) {
      recorder.record("userMessage", { text: "", input: ctx.input });
      recorder.record("error", { code: "noProvider", message: provider.problem });
      return { status: "failed", error: { code: "noProvider", message: provider.problem } };
    }
    const workspace = new Workspace(thread.workspacePath);
    const model = requested ?? provider.defaultModel;
    // Unknown models (live listings, local servers) are sent images; the server says if it minds.
    const images = lookupModel(provider.name, model)?.inputModalities?.includes("image") ?? true;
    const resources = this.options.workspace;
    const skills = resources?.skills.catalog(workspace.root) ?? [];
    const refs: InputRefs | undefined = resources && {
      skill: (name) => resources.skills.contentFor(workspace.root, name),
      command: (name, args) => resources.commands.expand(workspace.root, name, args),
    };
    const attach = { workspace, images, model, ...(refs ? { refs } : {}) };
    const client = ctx.messages ? historyFromClientMessages(ctx.messages) : undefined;
    // History reads its attachments again; one that cannot be sent any more becomes a note in the text.
    const history: RebuiltHistory = client
      ? { messages: client.messages, itemIds: new Map() }
      : rebuildHistory(await ctx.history(), (item) => userMessage(item.payload.input, { ...attach, onProblem: "placeholder" }));
    // ask_user only where a client can answer it, load_skill where there are skills (each costs
    // every request its spec).
    const offered = (tool: AnyTool): boolean =>
      (config.tools === undefined || config.tools.includes(tool.name)) &&
      (thread.mode === "agent" || tool.kind === "readOnly" || tool.kind === "plan") &&
      (tool.name !== askUserTool.name || ctx.ask !== undefined) &&
      (tool.name !== LOAD_SKILL || skills.length > 0);
    const builtinTools = this.options.tools.list(offered);
    const commandTimeoutMs = config.commandTimeoutMs ?? this.options.defaults.commandTimeoutMs;
    // The workspace's MCP servers' tools (those ready now; a server still starting joins at the
    // next turn) and its plugins' functions: their specs are their own schemas.
    const extraTools = [
      ...(config.dynamicTools ?? []).map(clientTool),
      ...(resources?.mcp.tools(workspace.root) ?? []),
      ...(resources?.plugins.tools(workspace.root, commandTimeoutMs) ?? []),
    ].filter(offered);
    const tools = [...builtinTools, ...extraTools];
    const runner = new TurnRunner({
      threadId: thread.id,
      recorder,
      signal: ctx.signal,
      workspace,
      provider,
      model,
      ...(ctx.thinking ? { thinking: ctx.thinking } : {}),
      system: [
        config.systemPrompt ?? systemPrompt({ workspacePath: workspace.root, mode: thread.mode }),
        projectInstructions(workspace.root),
        skillCatalog(skills),
        client?.system,
      ]
        .filter(Boolean)
        .join("\n\n"),
      tools,
      toolSpecs: [
        ...this.options.tools.specs((tool) => builtinTools.includes(tool)),
        ...extraTools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters ?? {} })),
      ],
      commandTimeoutMs,
      history: history.messages,
      historyItemIds: history.itemIds,
      contextWindow: config.contextWindow ?? lookupModel(provider.name, model)?.contextWindow,
      userMessage: (input) => userMessage(input, { ...attach, onProblem: "fail" }),
      approve: (ask, callId) => ctx.approve(ask, callId),
      ...(ctx.ask ? { ask: ctx.ask } : {}),
      ...(ctx.callClientTool ? { callClientTool: ctx.callClientTool } : {}),
      environment: () => ctx.environment(),
      takeSteering: () => ctx.takeSteering(),
      onUsage: (usage) => ctx.reportUsage(callUsage(usage, lookupModel(provider.name, model))),
      onPlan: (plan) => ctx.reportPlan(plan),
      onDiff: (diff) => ctx.reportDiff(diff),
    });
    return ctx.resume ? runner.resume() : runner.run(ctx.input);
  }

  async release(): Promise<void> {}

  async close(): Promise<void> {}
}
