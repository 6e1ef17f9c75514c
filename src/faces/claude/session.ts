// claude-app-server protocol, one connection: the initialize handshake, the method table, the
// threads this connection follows, event delivery, and approvals asked of this client.
import type { Logger } from "../../log.js";
import { ConnectionClosedError, type RequestContext, type RpcConnection, type RpcHandlers } from "../../rpc/connection.js";
import { RpcError } from "../../rpc/errors.js";
import { EventFeed, notifyEach } from "../event-feed.js";
import { FollowedThreads } from "../followed-threads.js";
import { dispatchRequests, type Dispatch } from "../../rpc/methods.js";
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import type { ApprovalRequest, Approver } from "../../runtime/approvals.js";
import type { RuntimeEvent } from "../../domain/events.js";
import type { ApprovalDecision, Thread } from "../../domain/model.js";
import type { ThinkingMode } from "../../providers/provider.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { ClaudeErrorCode, claudeError, notInitialized } from "./errors.js";
import { claudeModels, initializeResult, resolveAlias, SERVER_NAME } from "./handshake.js";
import { ClaudeRequests, PermissionMode, type ClaudeNotification, type ClaudeNotificationParams, type ClaudeResult } from "./protocol.js";
import { millis, permissionConfiguration, permissionMode, toInput, toNotifications, toolInput, turnStatus, wireTurn } from "./wire.js";

/**
 * The protocol's default model: used with the Anthropic provider
 * when neither the turn, the thread nor the server's configuration names a model.
 */
export const DEFAULT_MODEL = { provider: "anthropic", model: "claude-opus-4-6", thinking: "adaptive" as ThinkingMode };

interface PendingApproval {
  threadId: string;
  answer(approved: boolean): void;
  fail(error: Error): void;
}

export class ClaudeSession implements RpcHandlers {
  private initialized = false;
  /** What thread/start falls back to, from initialize. */
  private defaults: { cwd?: string; permissionMode: PermissionMode } = { permissionMode: "default" };
  private readonly followed: FollowedThreads;
  /** approval/request notifications waiting for approval/respond, by request id. */
  private readonly pending = new Map<string, PendingApproval>();
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
    this.dispatch = dispatchRequests(ClaudeRequests, this.handlers(), claudeError);
    const feed = new EventFeed(
      runtime,
      connection,
      (event) => this.wants(event),
      (event) => this.makeNotifications(event),
      notifyEach((notification) => this.notify(notification)),
      log,
    );
    this.detach.push(runtime.subscribe((event) => feed.live(event)));
    connection.onClose(() => {
      this.detach.forEach((undo) => undo());
      for (const approval of [...this.pending.values()]) approval.fail(new ConnectionClosedError());
    });
  }

  async onRequest(name: string, params: unknown, ctx: RequestContext): Promise<unknown> {
    // As the original: everything but initialize waits for it; initialize may come again.
    if (name !== "initialize" && !this.initialized) throw notInitialized();
    return this.dispatch(name, params, ctx);
  }

  onNotification(name: string): void {
    this.log.debug({ method: name }, "ignored notification");
  }

  private handlers(): RequestHandlers<typeof ClaudeRequests> {
    const rt = this.runtime;
    return {
      initialize: async (params) => {
        // Before the answer is awaited: requests sent right behind initialize find it done.
        if (!this.initialized) this.detach.push(rt.approvals.addApprover(this.approver()));
        this.initialized = true;
        this.defaults = { ...(params.cwd ? { cwd: params.cwd } : {}), permissionMode: params.permission_mode ?? "default" };
        this.log.info({ client: params.client?.name, transport: this.connection.info.transport }, "client initialized");
        const answer = await initializeResult({
          serverVersion: this.serverVersion,
          models: (options) => rt.listModels(options),
          toolNames: rt.toolNames(),
          log: this.log,
        });
        // The spec sends `initialized` after the response. Responses go out once the handler's
        // promise settles (microtasks); setImmediate runs after those, so the order holds.
        setImmediate(() => this.notify({ method: "initialized", params: { server: SERVER_NAME } }));
        return answer;
      },
      "thread/start": async (params) => {
        const mode = params.permission_mode ?? this.defaults.permissionMode;
        const thread = rt.startThread({
          workspacePath: params.cwd ?? this.defaults.cwd ?? process.cwd(),
          originChannel: SERVER_NAME,
          configuration: { ...permissionConfiguration(mode), ...(params.backend ? { backend: params.backend } : {}) },
        });
        this.followed.follow(thread.id);
        return { thread_id: thread.id, created_at: millis(thread.createdAt) };
      },
      "thread/resume": async ({ thread_id }) => {
        const thread = await rt.resumeThread(thread_id);
        this.followed.follow(thread_id);
        rt.approvals.offerPending(thread_id);
        return this.describe(thread);
      },
      "thread/fork": async ({ thread_id, at_turn_id }) => {
        // Following starts after the copied history: the client is not sent turns it already has.
        const fork = await rt.forkThread(thread_id, at_turn_id);
        this.followed.follow(fork.id);
        return { thread_id: fork.id, forked_from: thread_id, created_at: millis(fork.createdAt) };
      },
      "turn/start": async ({ thread_id, content, model }) => {
        const choice = model ? { model: resolveAlias(model) } : await this.defaultModel(thread_id);
        this.followed.follow(thread_id);
        const turn = await rt.startTurn(thread_id, { input: toInput(content), ...choice });
        return { turn_id: turn.id };
      },
      "turn/steer": async ({ thread_id, content }) => {
        const turn = await rt.steer(thread_id, toInput(content));
        return { turn_id: turn.id, note: "added to the running turn: the model reads it before its next step" };
      },
      "turn/interrupt": async ({ thread_id }) => {
        const turn = await rt.interrupt(thread_id);
        return { turn_id: turn.id, status: turnStatus(turn.status) };
      },
      "model/list": async () => ({
        models: claudeModels(await rt.listModels()),
      }),
      "skills/list": () => {
        // Whether a tool asks first depends on the permission mode; threads may differ, so
        // this answers for the mode this connection declared at initialize.
        const mode = this.defaults.permissionMode;
        const asks = (kind: string): boolean => (kind === "shell" ? mode !== "bypassPermissions" : kind === "write" && mode === "default");
        return {
          skills: rt
            .listTools()
            .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, needs_approval: asks(t.kind) })),
        };
      },
      "app/list": () => ({ apps: [] }),
      "approval/respond": async ({ request_id, approved }) => {
        const approval = this.pending.get(request_id);
        if (!approval) {
          throw new RpcError(
            ClaudeErrorCode.InvalidParams,
            `Unknown request_id "${request_id}": no approval/request with this id is waiting for an answer on this connection.`,
            { request_id },
          );
        }
        approval.answer(approved);
        const mode = permissionMode((await rt.findThread(approval.threadId))?.configuration);
        return {
          ok: true,
          thread_id: approval.threadId,
          approved,
          permission_mode: mode,
          note: approved ? "The tool call runs." : "The tool call was declined; the turn goes on without it.",
        };
      },
    };
  }

  private async describe(thread: Thread): Promise<ClaudeResult<"thread/resume">> {
    const turns = await this.runtime.turnsOf(thread.id);
    return {
      thread_id: thread.id,
      created_at: millis(thread.createdAt),
      cwd: thread.workspacePath,
      permission_mode: permissionMode(thread.configuration),
      turns: turns.map(wireTurn),
      updated_at: millis(thread.lastActiveAt),
      status: thread.status,
      running: this.runtime.runtimeState(thread.id).running,
      ...(thread.forkedFrom ? { forked_from: thread.forkedFrom.threadId } : {}),
    };
  }

  /**
   * The protocol's default model for a turn that names none: claude-opus-4-6 with adaptive
   * thinking when the built-in engine would call the Anthropic provider with its own default
   * model; nothing (the server's choice) when the thread or the server names a model, another
   * provider is in use, or an external agent runs the thread.
   */
  private async defaultModel(threadId: string): Promise<{ model?: string; thinking?: ThinkingMode }> {
    const selection = await this.runtime.modelSelection(threadId);
    if (selection.backend !== "builtin" || selection.model !== undefined || selection.provider !== DEFAULT_MODEL.provider) return {};
    return { model: DEFAULT_MODEL.model, thinking: DEFAULT_MODEL.thinking };
  }

  private wants(event: RuntimeEvent): boolean {
    return this.initialized && this.followed.wants(event);
  }

  private makeNotifications(event: RuntimeEvent): ClaudeNotification[] | Promise<ClaudeNotification[]> {
    this.followed.sent(event);
    return toNotifications(event, (turnId) => this.runtime.findTurn(turnId));
  }

  private notify(notification: ClaudeNotification): void {
    this.connection.notify(notification.method, notification.params);
  }

  private approver(): Approver {
    return {
      canAnswer: (threadId) => !this.connection.closed && this.followed.has(threadId),
      ask: async (request, signal) => {
        const params = await this.approvalParams(request);
        return new Promise<ApprovalDecision>((resolve, reject) => {
          if (signal.aborted) return reject(new Error("Approval request withdrawn"));
          const settle = (): void => {
            this.pending.delete(request.requestId);
            signal.removeEventListener("abort", withdraw);
          };
          // Aborted when another client answered first, the turn was interrupted, or it timed out.
          const withdraw = (): void => {
            settle();
            reject(new Error("Approval request withdrawn"));
          };
          this.pending.set(request.requestId, {
            threadId: request.threadId,
            answer: (approved) => {
              settle();
              resolve(approved ? "accept" : "decline");
            },
            fail: (error) => {
              settle();
              reject(error);
            },
          });
          signal.addEventListener("abort", withdraw, { once: true });
          this.notify({ method: "approval/request", params });
        });
      },
    };
  }

  private async approvalParams(request: ApprovalRequest): Promise<ClaudeNotificationParams<"approval/request">> {
    // The tool call the request is about carries the tool's name and arguments.
    const items = (await this.runtime.findTurn(request.turnId))?.items ?? [];
    const call = items.find((i) => i.type === "toolCall" && i.payload.callId === request.callId);
    const fromItem = call?.type === "toolCall" ? { tool_name: call.payload.toolName, input: toolInput(call.payload) } : undefined;
    return {
      thread_id: request.threadId,
      turn_id: request.turnId,
      request_id: request.requestId,
      // Without the item (never expected), name the tool by its approval type.
      ...(fromItem ?? {
        tool_name: request.approvalType === "shell" ? "bash" : request.operation.startsWith("edit ") ? "edit" : "write_file",
        input: { operation: request.operation, target: request.target },
      }),
      description: `${request.reason.replace(/\.$/, "")}: ${request.operation}`,
    };
  }
}
