// The Codex app-server dialect, one connection: the method table, the threads this connection
// follows, event delivery in Codex's notifications, and approvals asked with Codex's server
// requests.
import type { Logger } from "../../log.js";
import type { RequestContext, RpcConnection, RpcHandlers } from "../../rpc/connection.js";
import { dispatchRequests, type Dispatch } from "../../rpc/methods.js";
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import type { RuntimeEvent } from "../../domain/events.js";
import type { ApprovalDecision, Item, Thread as RuntimeThread, Turn as RuntimeTurn } from "../../domain/model.js";
import type { ApprovalRequest, Approver } from "../../runtime/approvals.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { EventFeed, notifyEach } from "../event-feed.js";
import { FollowedThreads } from "../followed-threads.js";
import { codexError, notInitialized } from "./errors.js";
import { codexInitializeResult } from "./handshake.js";
import { CodexRequests, type CodexNotification, type CodexResult, type Thread, type ThreadItem } from "./protocol.js";
import {
  CODEX_CHANNEL,
  approvalConfiguration,
  askForApproval,
  codexModel,
  codexThread,
  codexThreadId,
  isRecord,
  runtimeThreadId,
  codexTurn,
  mcpToolCall,
  threadItem,
  toInput,
} from "./wire.js";

/** What Codex names the provider of a thread whose provider the server chooses. */
const SERVER_PROVIDER = "switchyard";

/** Where a skill comes from, in Codex's words. */
const SKILL_SCOPE = { workspace: "repo", plugin: "user", builtin: "system", user: "user" } as const;

/** Codex's configuration keys that Switchyard has no value for. */
const UNSET_CONFIG = Object.fromEntries(
  [
    "review_model",
    "model_context_window",
    "model_auto_compact_token_limit",
    "model_auto_compact_token_limit_scope",
    "approval_policy",
    "approvals_reviewer",
    "sandbox_mode",
    "sandbox_workspace_write",
    "forced_chatgpt_workspace_id",
    "forced_login_method",
    "web_search",
    "client_search_provider",
    "tools",
    "instructions",
    "developer_instructions",
    "compact_prompt",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "service_tier",
    "analytics",
    "browser_use",
    "computer_use",
    "desktop",
  ].map((key) => [key, null]),
);

export class CodexSession implements RpcHandlers {
  private initialized = false;
  private readonly followed: FollowedThreads;
  private readonly dispatch: Dispatch;
  private readonly detach: Array<() => void> = [];

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly connection: RpcConnection,
    private readonly serverVersion: string,
    private readonly log: Logger,
  ) {
    this.followed = new FollowedThreads(runtime);
    this.detach.push(() => this.followed.close());
    this.dispatch = dispatchRequests(CodexRequests, this.handlers(), codexError);
    const feed = new EventFeed(
      runtime,
      connection,
      (event) => this.wants(event),
      (event) => this.makeNotifications(event),
      notifyEach((notification) => this.notify(notification)),
      log,
    );
    this.detach.push(runtime.subscribe((event) => feed.live(event)));
    connection.onClose(() => this.detach.forEach((undo) => undo()));
  }

  async onRequest(name: string, params: unknown, ctx: RequestContext): Promise<unknown> {
    if (name !== "initialize" && !this.initialized) throw notInitialized();
    // Every request names its thread `threadId`, in Codex's UUID form: handlers see the runtime's id.
    const threadId = isRecord(params) && typeof params.threadId === "string" ? params.threadId : undefined;
    return this.dispatch(name, threadId ? { ...(params as object), threadId: runtimeThreadId(threadId) } : params, ctx);
  }

  onNotification(name: string): void {
    // `initialized` and the like need no answer.
    this.log.debug({ method: name }, "notification");
  }

  private handlers(): RequestHandlers<typeof CodexRequests> {
    const rt = this.runtime;
    return {
      initialize: ({ clientInfo }) => {
        if (!this.initialized) this.detach.push(rt.approvals.addApprover(this.approver()));
        this.initialized = true;
        this.log.info({ client: clientInfo.name, transport: this.connection.info.transport }, "codex client initialized");
        return codexInitializeResult(this.serverVersion);
      },
      // Switchyard holds the model API keys; a client signs in to nothing.
      "account/read": () => ({ account: { type: "apiKey" }, userId: null, requiresOpenaiAuth: false }),
      "config/read": async ({ cwd }) => {
        const model = await this.defaultModelId(undefined);
        return {
          config: { ...UNSET_CONFIG, model: model ?? null, model_provider: SERVER_PROVIDER, cwd: cwd ?? null },
          origins: {},
          layers: null,
        };
      },
      "configRequirements/read": () => ({ supportsIndependentSpeedModes: null, requirements: null }),
      "skills/list": ({ cwds }) => ({
        data: (cwds && cwds.length > 0 ? cwds : [process.cwd()]).map((cwd) => ({
          cwd,
          skills: rt.workspace.skills.list(cwd).map((skill) => ({
            name: skill.name,
            description: skill.description,
            path: skill.path,
            scope: SKILL_SCOPE[skill.source],
            enabled: skill.enabled && skill.available,
            pluginId: skill.pluginId ?? null,
          })),
          errors: [],
        })),
      }),
      "model/list": async () => ({ data: (await rt.listModels()).map(codexModel), nextCursor: null }),
      "thread/start": async (params) => {
        const thread = rt.startThread({
          workspacePath: params.cwd ?? process.cwd(),
          originChannel: CODEX_CHANNEL,
          // Codex's clients start ephemeral threads for side work (e.g. naming a thread); they
          // are kept like any thread, and left out of this face's thread/list.
          ...(params.ephemeral ? { metadata: { ephemeral: true } } : {}),
          configuration: {
            ...approvalConfiguration(params.approvalPolicy),
            ...(params.model ? { model: params.model } : {}),
            ...(params.modelProvider ? { provider: params.modelProvider } : {}),
            ...(params.developerInstructions || params.baseInstructions
              ? { systemPrompt: params.developerInstructions ?? params.baseInstructions ?? "" }
              : {}),
          },
        });
        this.followed.follow(thread.id);
        const answer = await this.session(thread, []);
        this.notifyAfterAnswer({ method: "thread/started", params: { thread: answer.thread } });
        return answer;
      },
      "thread/resume": async (params) => {
        const thread = await this.configure(await rt.resumeThread(params.threadId), params);
        this.followed.follow(thread.id);
        rt.approvals.offerPending(thread.id);
        const turns = params.excludeTurns ? [] : await rt.turnsOf(thread.id, true);
        return { ...(await this.session(thread, turns)), collaborationMode: null, turnsBackwardsCursor: null, itemsBackwardsCursor: null };
      },
      "thread/fork": async (params) => {
        const fork = await this.configure(await rt.forkThread(params.threadId), params);
        this.followed.follow(fork.id);
        const answer = await this.session(fork, await rt.turnsOf(fork.id, true));
        this.notifyAfterAnswer({ method: "thread/started", params: { thread: answer.thread } });
        return answer;
      },
      "thread/list": async (params) => {
        const cwd = typeof params.cwd === "string" ? params.cwd : undefined;
        const filter = {
          ...(params.archived ? { status: "archived" as const } : { hideArchived: true }),
          ...(cwd ? { workspacePath: cwd } : {}),
        };
        const limit = params.limit ?? 25;
        // Pages of the runtime's list until `limit` threads remain once ephemeral ones are left out.
        const data: Thread[] = [];
        let cursor = params.cursor ?? undefined;
        do {
          const page = await rt.listThreads(filter, { limit: limit - data.length, ...(cursor ? { cursor } : {}) });
          for (const thread of page.threads) {
            if (thread.metadata.ephemeral !== true)
              data.push(await this.describe(thread, (await rt.turnsOf(thread.id)).slice(0, 1), false));
          }
          cursor = page.nextCursor;
        } while (cursor && data.length < limit);
        return { data, nextCursor: cursor ?? null, backwardsCursor: null };
      },
      "thread/read": async ({ threadId, includeTurns }) => {
        const thread = await rt.getThread(threadId);
        return { thread: await this.describe(thread, await rt.turnsOf(threadId, Boolean(includeTurns)), Boolean(includeTurns)) };
      },
      "thread/archive": async ({ threadId }) => {
        await rt.archiveThread(threadId);
        this.notifyAfterAnswer({ method: "thread/archived", params: { threadId: codexThreadId(threadId) } });
        return {};
      },
      "thread/unarchive": async ({ threadId }) => {
        const thread = await rt.unarchiveThread(threadId);
        this.notifyAfterAnswer({ method: "thread/unarchived", params: { threadId: codexThreadId(threadId) } });
        return { thread: await this.describe(thread, (await rt.turnsOf(threadId)).slice(0, 1), false) };
      },
      "thread/name/set": async ({ threadId, name }) => {
        await rt.renameThread(threadId, name);
        return {};
      },
      "turn/start": async (params) => {
        // The turn's model is the turn's; its approval policy becomes the thread's.
        await this.configure(await rt.resumeThread(params.threadId), { approvalPolicy: params.approvalPolicy });
        this.followed.follow(params.threadId);
        const turn = await rt.startTurn(params.threadId, {
          input: toInput(params.input),
          ...(params.model ? { model: params.model } : {}),
        });
        return { turn: codexTurn(turn, false) };
      },
      "turn/steer": async ({ threadId, input, expectedTurnId }) => ({
        turnId: (await rt.steer(threadId, toInput(input), expectedTurnId)).id,
      }),
      "turn/interrupt": async ({ threadId, turnId }) => {
        await rt.interrupt(threadId, turnId);
        return {};
      },
    };
  }

  /** A session-level request's overrides (approval policy, model), applied to the thread. */
  private configure(
    thread: RuntimeThread,
    params: { approvalPolicy?: Parameters<typeof approvalConfiguration>[0]; model?: string | null | undefined },
  ): Promise<RuntimeThread> {
    const changes = { ...approvalConfiguration(params.approvalPolicy), ...(params.model ? { model: params.model } : {}) };
    return Object.keys(changes).length > 0 ? this.runtime.configureThread(thread.id, changes) : Promise.resolve(thread);
  }

  /** thread/start, resume and fork's answer: the thread and the settings its turns run with. */
  private async session(thread: RuntimeThread, turns: RuntimeTurn[]): Promise<CodexResult<"thread/start">> {
    const described = await this.describe(thread, turns, true);
    return {
      thread: described,
      model: described.model ?? "",
      modelProvider: described.modelProvider,
      serviceTier: null,
      disabledPluginIds: [],
      cwd: thread.workspacePath,
      instructionSources: [],
      approvalPolicy: askForApproval(thread.configuration),
      approvalsReviewer: "user",
      // File tools are confined to the workspace; commands run after an approval (unless "never").
      sandbox: {
        type: "workspaceWrite",
        writableRoots: [thread.workspacePath],
        networkAccess: true,
        excludeTmpdirEnvVar: false,
        excludeSlashTmp: false,
      },
      reasoningEffort: null,
    };
  }

  private async describe(thread: RuntimeThread, turns: RuntimeTurn[], withTurns: boolean): Promise<Thread> {
    const selection = await this.runtime.modelSelection(thread.id);
    const state = this.runtime.runtimeState(thread.id);
    const model = selection.model ?? (await this.defaultModelId(selection.provider));
    return codexThread(thread, {
      ...(withTurns ? { turns } : {}),
      previewFrom: turns,
      running: state.running,
      waitingOnApproval: state.waitingOnApproval,
      provider: selection.provider ?? SERVER_PROVIDER,
      model: model ?? null,
      serverVersion: this.serverVersion,
    });
  }

  private async defaultModelId(provider: string | undefined): Promise<string | undefined> {
    const models = await this.runtime.listModels({ askRemote: false }).catch(() => []);
    return (models.find((m) => m.isDefault && (provider === undefined || m.provider === provider)) ?? models[0])?.id;
  }

  private wants(event: RuntimeEvent): boolean {
    return this.initialized && this.followed.wants(event);
  }

  private makeNotifications(event: RuntimeEvent): CodexNotification[] | Promise<CodexNotification[]> {
    this.followed.sent(event);
    return this.toNotifications(event);
  }

  /** The notifications of an event; a Promise for those that read the store (usage totals, a turn's end). */
  private toNotifications(event: RuntimeEvent): CodexNotification[] | Promise<CodexNotification[]> {
    const threadId = codexThreadId(event.threadId);
    switch (event.type) {
      case "thread.renamed":
        return [{ method: "thread/name/updated", params: { threadId, threadName: event.data.displayName } }];
      case "turn.started":
        return [{ method: "turn/started", params: { threadId, turn: codexTurn(event.data.turn, false) } }];
      case "turn.planUpdated": {
        const { explanation, steps } = event.data.plan;
        const plan = steps.map(({ step, status }) => ({ step, status: status === "in_progress" ? ("inProgress" as const) : status }));
        return [{ method: "turn/plan/updated", params: { threadId, turnId: event.data.turnId, explanation: explanation ?? null, plan } }];
      }
      case "item.started": {
        const { item } = event.data;
        const wire = threadItem(item);
        return wire
          ? [{ method: "item/started", params: { item: wire, threadId, turnId: item.turnId, startedAtMs: Date.parse(item.createdAt) } }]
          : [];
      }
      case "item.completed": {
        const { item } = event.data;
        const completedAtMs = Date.parse(item.completedAt ?? item.createdAt);
        const make = (wire: ThreadItem | undefined): CodexNotification[] =>
          wire ? [{ method: "item/completed", params: { item: wire, threadId, turnId: item.turnId, completedAtMs } }] : [];
        return item.type === "toolResult" ? this.mcpResultItem(item).then(make) : make(this.completedItem(item));
      }
      case "item.delta": {
        const { kind, turnId, itemId, delta } = event.data;
        if (kind === "agentMessage") return [{ method: "item/agentMessage/delta", params: { threadId, turnId, itemId, delta } }];
        if (kind === "reasoning")
          return [{ method: "item/reasoning/textDelta", params: { threadId, turnId, itemId, delta, contentIndex: 0 } }];
        if (kind === "commandOutput") return [{ method: "item/commandExecution/outputDelta", params: { threadId, turnId, itemId, delta } }];
        return [];
      }
      case "usage.updated":
        return this.usageNotifications(event);
      case "turn.completed":
      case "turn.cancelled":
      case "turn.failed":
        return this.turnEndNotifications(event);
      default:
        return [];
    }
  }

  private async usageNotifications(event: Extract<RuntimeEvent, { type: "usage.updated" }>): Promise<CodexNotification[]> {
    const breakdown = (usage: typeof event.data.usage) => ({
      totalTokens: usage.totalTokens,
      inputTokens: usage.inputTokens,
      cachedInputTokens: usage.cachedInputTokens ?? 0,
      cacheWriteInputTokens: 0,
      outputTokens: usage.outputTokens,
      reasoningOutputTokens: usage.reasoningTokens ?? 0,
    });
    const total = (await this.runtime.threadUsage([event.threadId])).get(event.threadId) ?? event.data.usage;
    const last = breakdown(event.data.delta ?? event.data.usage);
    return [
      {
        method: "thread/tokenUsage/updated",
        params: {
          threadId: codexThreadId(event.threadId),
          turnId: event.data.turnId,
          tokenUsage: { total: breakdown(total), last, modelContextWindow: null },
        },
      },
    ];
  }

  private async turnEndNotifications(
    event: Extract<RuntimeEvent, { type: "turn.completed" | "turn.cancelled" | "turn.failed" }>,
  ): Promise<CodexNotification[]> {
    const threadId = codexThreadId(event.threadId);
    const turn = await this.runtime.findTurn(event.data.turnId, { withItems: false });
    if (!turn) return [];
    const completed: CodexNotification = { method: "turn/completed", params: { threadId, turn: codexTurn(turn, false) } };
    if (event.type !== "turn.failed") return [completed];
    const { message, code } = event.data.error;
    const error = { message, codexErrorInfo: null, additionalDetails: code, misalignment: null };
    return [{ method: "error", params: { error, willRetry: false, threadId, turnId: turn.id } }, completed];
  }

  /**
   * What a completed runtime item completes in Codex's terms. An MCP call's item completes with
   * its result, not when its arguments are in.
   */
  private completedItem(item: Item): ThreadItem | undefined {
    if (item.type === "toolCall" && item.payload.mcpServer) return undefined;
    return threadItem(item);
  }

  /** A tool result completes the MCP call it answers (read back from its turn), or nothing. */
  private async mcpResultItem(item: Extract<Item, { type: "toolResult" }>): Promise<ThreadItem | undefined> {
    const turn = await this.runtime.findTurn(item.turnId);
    const call = turn?.items?.find((i) => i.type === "toolCall" && i.payload.callId === item.payload.callId);
    return call?.type === "toolCall" && call.payload.mcpServer ? mcpToolCall(call, item) : undefined;
  }

  private notify(notification: CodexNotification): void {
    this.connection.notify(notification.method, notification.params);
  }

  /** After the response: it goes out once the handler's promise settles, before setImmediate. */
  private notifyAfterAnswer(notification: CodexNotification): void {
    setImmediate(() => this.notify(notification));
  }

  private approver(): Approver {
    return {
      canAnswer: (threadId) => !this.connection.closed && this.followed.has(threadId),
      ask: async (request, signal) => {
        const { method, params } = approvalRequest(request);
        const answer = await this.connection.request<{ decision?: unknown }>(method, params, { signal, timeoutMs: 0 });
        return decision(answer?.decision);
      },
    };
  }
}

function approvalRequest(request: ApprovalRequest): { method: string; params: Record<string, unknown> } {
  const common = {
    threadId: codexThreadId(request.threadId),
    turnId: request.turnId,
    // The call's id: Codex names the item that will run, which does not exist before the answer.
    itemId: request.callId,
    startedAtMs: Date.now(),
    reason: request.reason,
  };
  return request.approvalType === "shell"
    ? {
        method: "item/commandExecution/requestApproval",
        params: { ...common, kind: "command", environmentId: null, command: request.operation, cwd: request.target },
      }
    : { method: "item/fileChange/requestApproval", params: { ...common, grantRoot: null } };
}

/** Codex's decision as the runtime's; its amendments (exec policy, network) count as accept. */
function decision(value: unknown): ApprovalDecision {
  if (value === "accept" || value === "acceptForSession" || value === "decline" || value === "cancel") return value;
  return typeof value === "object" && value !== null ? "accept" : "decline";
}
