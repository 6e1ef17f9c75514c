// AppServer protocol, one connection: the initialize handshake, the method table, thread
// subscriptions, event delivery, and approvals asked of this client.
import type { Logger } from "../../log.js";
import type { RpcConnection, RpcHandlers, RequestContext } from "../../rpc/connection.js";
import { EventFeed } from "../event-feed.js";
import { Subscriptions } from "../followed-threads.js";
import { dispatchRequests, type Dispatch } from "../../rpc/methods.js";
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import { dispatchInitialized } from "./errors.js";
import { initializeResult } from "./handshake.js";
import { rawJsonAs, rawResult } from "../../rpc/raw-json.js";
import type { ApprovalRequest } from "../../runtime/approvals.js";
import type { ClientToolCall } from "../../tools/tool.js";
import { RuntimeError } from "../../domain/errors.js";
import type { RuntimeEvent } from "../../domain/events.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { ApprovalAnswer, ClientToolAnswer } from "./protocol.js";
import { AppServerRequests } from "./protocol.js";
import { managementHandlers } from "./management.js";
import {
  ItemFilter,
  storageNotification,
  toNotification,
  wireThread,
  type EventContext,
  type Notification,
  type WireItem,
  type WireThread,
} from "./wire.js";

export class AppServerSession implements RpcHandlers {
  private initialized = false;
  private filter = new ItemFilter({});
  private optOut = new Set<string>();
  private configChanges = true;
  private readonly subscriptions: Subscriptions;
  private readonly feed: EventFeed<Notification | undefined>;
  private readonly dispatch: Dispatch;
  private readonly detach: Array<() => void> = [];

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly connection: RpcConnection,
    private readonly serverVersion: string,
    private readonly log: Logger,
  ) {
    this.subscriptions = new Subscriptions(runtime);
    this.detach.push(() => this.subscriptions.close());
    this.dispatch = dispatchRequests(AppServerRequests, this.handlers());
    this.feed = new EventFeed(
      runtime,
      connection,
      (event) => this.wants(event),
      (event) => this.make(event),
      (notification) => this.notify(notification),
      log,
    );
    this.detach.push(runtime.subscribe((event) => this.feed.live(event)));
    this.detach.push(
      runtime.onStorageStatus((status) => {
        const { method, params } = storageNotification(status);
        this.broadcast(method, params);
      }),
    );
    this.detach.push(
      runtime.workspace.changes.on((change) => {
        if (this.configChanges) this.broadcast("workspace/configChanged", change);
      }),
      runtime.workspace.mcp.onStatus((workspacePath, server) => this.broadcast("mcp/status/updated", { server, workspacePath })),
      runtime.automation.cron.onChange((job, removed) => this.broadcast("cron/stateChanged", { job, removed })),
      runtime.automation.cron.onResult((result) => this.broadcast("system/jobResult", result)),
    );
    connection.onClose(() => this.detach.forEach((undo) => undo()));
  }

  onRequest(name: string, params: unknown, ctx: RequestContext): Promise<unknown> {
    return dispatchInitialized(this.dispatch, this.initialized, name, params, ctx);
  }

  onNotification(name: string): void {
    // `initialized` needs no action: requests are accepted as soon as initialize has answered.
    if (name !== "initialized") this.log.debug({ method: name }, "ignored notification");
  }

  private handlers(): RequestHandlers<typeof AppServerRequests> {
    const rt = this.runtime;
    return {
      initialize: (params) => {
        const caps = params.capabilities ?? {};
        this.initialized = true;
        this.filter = new ItemFilter(caps);
        this.optOut = new Set(caps.optOutNotificationMethods ?? []);
        this.configChanges = caps.configChange !== false;
        if (caps.approvalSupport) this.detach.push(rt.approvals.addApprover(this.approver()));
        this.log.info({ client: params.clientInfo.name, transport: this.connection.info.transport }, "client initialized");
        return initializeResult(this.serverVersion);
      },
      "thread/start": async (params) => {
        const identity = params.identity ?? {};
        const thread = rt.startThread({
          workspacePath: identity.workspacePath ?? process.cwd(),
          originChannel: identity.channelName ?? "appserver",
          ...(identity.userId !== undefined ? { userId: identity.userId } : {}),
          ...(identity.channelContext !== undefined ? { channelContext: identity.channelContext } : {}),
          ...(params.displayName !== undefined ? { displayName: params.displayName } : {}),
          ...(params.historyMode ? { historyMode: params.historyMode } : {}),
          ...(params.configuration ? { configuration: params.configuration } : {}),
          ...(params.metadata ? { metadata: params.metadata } : {}),
        });
        this.subscriptions.add(thread.id);
        return { thread: { ...(await this.thread(thread.id)), turns: [] } };
      },
      "thread/resume": async ({ threadId }) => {
        await rt.resumeThread(threadId);
        this.subscriptions.add(threadId);
        rt.approvals.offerPending(threadId);
        return rawResult({ thread: await this.threadWithHistory(threadId) });
      },
      "thread/list": async (params) => {
        const identity = params.identity ?? {};
        const page = await rt.listThreads(
          {
            ...(identity.userId !== undefined ? { userId: identity.userId } : {}),
            ...(identity.channelName !== undefined ? { originChannel: identity.channelName } : {}),
            ...(identity.workspacePath !== undefined ? { workspacePath: identity.workspacePath } : {}),
            ...(identity.channelContext !== undefined ? { channelContext: identity.channelContext } : {}),
            ...(params.status ? { status: params.status } : {}),
            // Archived threads are listed only when asked for, by includeArchived or a status filter.
            ...(!params.includeArchived && !params.status ? { hideArchived: true } : {}),
          },
          { limit: params.limit ?? 50, ...(params.cursor ? { cursor: params.cursor } : {}) },
        );
        const usage = await rt.threadUsage(page.threads.map((t) => t.id));
        return {
          data: page.threads.map((t) => wireThread(t, rt.runtimeState(t.id), usage.get(t.id))),
          ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
        };
      },
      "thread/read": async ({ threadId, includeTurns }) => {
        const plan = await rt.latestPlan(threadId);
        const thread = includeTurns === false ? await this.thread(threadId) : await this.threadWithHistory(threadId);
        return rawResult({ thread, ...(plan ? { plan } : {}) });
      },
      "thread/subscribe": async ({ threadId, afterSeq }) => {
        await rt.getThread(threadId);
        // Replay reads the log up to now; live delivery then skips what the replay sent (by
        // seq), so nothing is missed and nothing comes twice. A replay larger than the output
        // budget continues after this answer, as the connection drains.
        if (afterSeq !== undefined) await rt.eventsAfter(threadId, afterSeq, 0); // refuses a seq beyond the log
        this.subscriptions.add(threadId);
        const replayed = afterSeq === undefined ? 0 : await this.feed.replay(threadId, afterSeq);
        rt.approvals.offerPending(threadId);
        return { subscribed: true, replayed, runtime: rt.runtimeState(threadId) };
      },
      "thread/unsubscribe": ({ threadId }) => {
        this.feed.forget(threadId);
        return { unsubscribed: this.subscriptions.delete(threadId) };
      },
      "thread/rename": async ({ threadId, displayName }) => {
        await rt.renameThread(threadId, displayName);
        return { thread: await this.thread(threadId) };
      },
      "thread/delete": async ({ threadId }) => {
        await rt.deleteThread(threadId);
        return { deleted: true };
      },
      "thread/pause": async ({ threadId }) => {
        await rt.pauseThread(threadId);
        return { thread: await this.thread(threadId) };
      },
      "thread/unpause": async ({ threadId }) => {
        await rt.unpauseThread(threadId);
        return { thread: await this.thread(threadId) };
      },
      "thread/archive": async ({ threadId }) => {
        await rt.archiveThread(threadId);
        return { thread: await this.thread(threadId) };
      },
      "thread/unarchive": async ({ threadId }) => {
        await rt.unarchiveThread(threadId);
        return { thread: await this.thread(threadId) };
      },
      "thread/config/update": async ({ threadId, configuration }) => {
        await rt.configureThread(threadId, configuration);
        return { thread: await this.thread(threadId) };
      },
      "thread/mode/set": async ({ threadId, mode }) => {
        await rt.setMode(threadId, mode);
        return { thread: await this.thread(threadId) };
      },
      "turn/start": async ({ threadId, input, messages, model, provider }) => {
        this.subscriptions.add(threadId);
        const turn = await rt.startTurn(threadId, {
          input,
          ...(messages ? { messages } : {}),
          ...(model ? { model } : {}),
          ...(provider ? { provider } : {}),
        });
        return { turn };
      },
      "turn/enqueue": ({ threadId, input }) => {
        this.subscriptions.add(threadId);
        return rt.enqueue(threadId, input);
      },
      "turn/steer": async ({ threadId, input, expectedTurnId }) => {
        const turn = await rt.steer(threadId, input, expectedTurnId);
        return { turnId: turn.id };
      },
      "turn/queue/remove": async ({ threadId, queuedInputId }) => {
        return { queuedInputs: await rt.removeQueued(threadId, queuedInputId) };
      },
      "turn/interrupt": async ({ threadId, turnId }) => {
        const turn = await rt.interrupt(threadId, turnId);
        return { turn: { ...turn, items: undefined } };
      },
      "model/list": async ({ provider }) => {
        const models = await rt.listModels();
        return { data: provider === undefined ? models : models.filter((m) => m.provider === provider) };
      },
      "backend/list": async () => ({ data: await rt.listBackends() }),
      ...managementHandlers(
        rt,
        (threadId) => this.thread(threadId),
        (threadId) => this.subscriptions.add(threadId),
      ),
    };
  }

  private async thread(threadId: string): Promise<WireThread> {
    const rt = this.runtime;
    const [thread, usage] = await Promise.all([rt.getThread(threadId), rt.threadUsage([threadId])]);
    return wireThread(thread, rt.runtimeState(threadId), usage.get(threadId));
  }

  /**
   * The thread with every turn and item. Items go out as the JSON text the store holds (the
   * runtime's item shape is this protocol's item shape): a 20,000-item thread is read without
   * parsing and re-serializing every item.
   */
  private async threadWithHistory(threadId: string): Promise<WireThread> {
    const [thread, items, turnsOf] = await Promise.all([
      this.thread(threadId),
      this.runtime.itemsJsonByTurn(threadId, this.filter.unwantedItemTypes),
      this.runtime.turnsOf(threadId, false),
    ]);
    const byTurn = new Map(items.map(({ turnId, json }) => [turnId, rawJsonAs<WireItem[]>(json)]));
    const turns = turnsOf.map((turn) => ({ ...turn, items: byTurn.get(turn.id) ?? [] }));
    return { ...thread, turns };
  }

  private readonly eventContext: EventContext = {
    // A thread deleted since the event has nothing to show (one read of its row, not a look first).
    thread: (threadId) =>
      this.thread(threadId).catch((error: unknown) => {
        if (error instanceof RuntimeError && error.code === "threadNotFound") return undefined;
        throw error;
      }),
    turn: (turnId) => this.runtime.findTurn(turnId, { withItems: false }),
  };

  /** thread/started, thread/deleted and thread/statusChanged go to every client (their thread lists change); the rest only to subscribers. */
  private wants(event: RuntimeEvent): boolean {
    if (!this.initialized) return false;
    const broadcast = event.type === "thread.created" || event.type === "thread.deleted" || event.type === "thread.statusChanged";
    return broadcast || this.subscriptions.has(event.threadId);
  }

  private make(event: RuntimeEvent): ReturnType<typeof toNotification> {
    if (event.type === "thread.deleted") this.subscriptions.delete(event.threadId);
    return toNotification(event, this.filter, this.eventContext);
  }

  private notify(notification: Notification | undefined): boolean {
    if (!notification || this.optOut.has(notification.method)) return false;
    this.connection.notify(notification.method, notification.params);
    return true;
  }

  /** A notification of no thread, to this client once it is initialized and unless it opted out. */
  private broadcast(method: string, params: object): void {
    if (this.initialized && !this.connection.closed && !this.optOut.has(method)) this.connection.notify(method, params);
  }

  private approver() {
    return {
      canAnswer: (threadId: string) => !this.connection.closed && this.subscriptions.has(threadId),
      ask: async (request: ApprovalRequest, signal: AbortSignal) => {
        const { decisions, ...params } = request;
        const answer = await this.connection.request(
          "item/approval/request",
          { ...params, availableDecisions: decisions },
          { signal, timeoutMs: Infinity /* the broker owns the timeout */ },
        );
        const parsed = ApprovalAnswer.safeParse(answer);
        // An answer we cannot read is treated as a refusal: the safe choice.
        return parsed.success ? parsed.data.decision : "decline";
      },
      callTool: async (request: ClientToolCall & { threadId: string; turnId: string }, signal: AbortSignal) => {
        const answer = await this.connection.request("item/tool/call", request, { signal, timeoutMs: Infinity /* the turn bounds it */ });
        const parsed = ClientToolAnswer.safeParse(answer);
        if (!parsed.success) return { output: "The client's answer to item/tool/call could not be read.", success: false };
        const { output, contentItems, success } = parsed.data;
        return { output: output ?? (contentItems ?? []).map((item) => item.text ?? "").join("\n"), success };
      },
    };
  }
}
