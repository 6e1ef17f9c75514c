// ACP face, one connection: the agent's request handlers, the sessions (runtime threads) this
// connection follows, event delivery as session/update, and approvals asked of the client.
import path from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import type { Logger } from "../../log.js";
import type { ListedModel } from "../../providers/model-catalog.js";
import type { RuntimeEvent } from "../../domain/events.js";
import type { ApprovalDecision, Thread, TurnError } from "../../domain/model.js";
import type { ApprovalRequest, Approver } from "../../runtime/approvals.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { guarded, turnFailedError } from "./errors.js";
import {
  PERMISSION_OPTIONS,
  SessionUpdateMapper,
  decisionFor,
  isModeId,
  modeIdOf,
  modeSettings,
  modeState,
  replayUpdates,
  sessionInfo,
  stopReasonFor,
  toInput,
  toolKind,
  toolTitle,
  usageUpdate,
  type ModeId,
} from "./wire.js";
import { clientEnvironment } from "./environment.js";
import { initializeResult } from "./handshake.js";
import type { StreamContext } from "../face.js";

export const ORIGIN_CHANNEL = "acp";

/** Serves one ACP client on a byte stream; resolves when its connection has closed (e.g. stdin ended). */
export function serveAcpStream({ runtime, log, serverVersion, input, output }: Omit<StreamContext, "serving">): Promise<void> {
  const stream = acp.ndJsonStream(
    Writable.toWeb(output as Writable) as WritableStream<Uint8Array>,
    Readable.toWeb(input as Readable) as ReadableStream<Uint8Array>,
  );
  return new AcpSession(runtime, serverVersion, log).serve(stream);
}
const LIST_PAGE_SIZE = 50;

type TurnEnd = { status: "completed" } | { status: "cancelled" } | { status: "failed"; error: TurnError };

interface FollowedSession {
  /** Events with a seq up to this one were sent (or replayed) already. */
  fromSeq: number;
  mapper: SessionUpdateMapper;
  /** Turns this connection started with session/prompt: their user message is not echoed. */
  ownTurns: Set<string>;
  modeId: ModeId;
  /** What the mode is made of, kept from the thread's events. */
  modeSource: Pick<Thread, "mode" | "configuration">;
  /** Scope keys the user answered "always reject" for, on this connection. */
  rejected: Set<string>;
  contextWindow?: number;
  /** Stops following: releases the thread with the runtime, detaches the client's file system / terminal from it. */
  stop: () => void;
}

export class AcpSession {
  private client?: acp.AgentContext;
  private capabilities: acp.ClientCapabilities = {};
  private closed = false;
  private initialized = false;
  /** The model catalog, fetched once at initialize (for usage_update's context window size). */
  private models: Promise<ListedModel[]> = Promise.resolve([]);
  private readonly sessions = new Map<string, FollowedSession>();
  /** session/prompt calls waiting for their turn to end, by turn id. */
  private readonly waiting = new Map<string, (end: TurnEnd) => void>();
  /** Notifications go out in order, and a prompt's answer after its turn's updates. */
  private sending: Promise<void> = Promise.resolve();
  private readonly detach: Array<() => void> = [];

  /** Set once `ready` resolves: every handler but initialize awaits that first. */
  private runtime!: RuntimeApi;

  constructor(
    /** Still loading when the client connects: initialize is answered without it. */
    private readonly ready: Promise<RuntimeApi>,
    private readonly serverVersion: string,
    private readonly log: Logger,
  ) {}

  /** Serves one ACP client over the stream; resolves when the connection closes. */
  serve(stream: acp.Stream): Promise<void> {
    const connection = this.app().connect(stream);
    this.client = connection.client;
    // Registered before any handler awaits `ready`, so it runs first.
    void this.ready.then((rt) => {
      this.runtime = rt;
      if (!this.closed) this.detach.push(rt.subscribe((event) => this.deliver(event)));
    });
    return connection.closed.finally(() => this.close());
  }

  private close(): void {
    this.closed = true;
    this.detach.splice(0).forEach((undo) => undo());
    for (const session of this.sessions.values()) session.stop();
  }

  private app(): acp.AgentApp {
    return acp
      .agent({ name: "switchyard" })
      .onRequest(acp.methods.agent.initialize, ({ params }) => {
        this.capabilities = params.clientCapabilities ?? {};
        if (!this.initialized) {
          this.initialized = true;
          const ready = this.ready.then((rt) => {
            if (!this.closed) this.detach.push(rt.approvals.addApprover(this.approver()));
            return rt;
          });
          // session/new waits for these: no round trip to a remote models endpoint (see ListOptions).
          this.models = ready.then((rt) => rt.listModels({ askRemote: false })).catch((): ListedModel[] => []);
        }
        this.log.info({ client: params.clientInfo?.name, protocolVersion: params.protocolVersion }, "ACP client initialized");
        return initializeResult(this.serverVersion);
      })
      .onRequest(acp.methods.agent.session.new, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          if (params.mcpServers.length > 0)
            this.log.warn({ count: params.mcpServers.length }, "MCP servers from the ACP client are not supported; ignored");
          const thread = rt.startThread({ workspacePath: params.cwd, originChannel: ORIGIN_CHANNEL });
          this.follow(thread);
          return { sessionId: thread.id, modes: modeState(thread) };
        }),
      )
      .onRequest(acp.methods.agent.session.load, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          const thread = await rt.resumeThread(params.sessionId);
          this.unfollow(thread.id); // a reload replays everything to a fresh mapping
          const session = this.follow(thread);
          const turns = await rt.turnsOf(thread.id);
          for (const update of replayUpdates(session.mapper, turns, thread.plan)) this.send(thread.id, update);
          await this.sending;
          rt.approvals.offerPending(thread.id);
          return { modes: modeState(thread) };
        }),
      )
      .onRequest(acp.methods.agent.session.resume, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          const thread = await rt.resumeThread(params.sessionId);
          this.follow(thread);
          rt.approvals.offerPending(thread.id);
          return { modes: modeState(thread) };
        }),
      )
      .onRequest(acp.methods.agent.session.close, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          await rt.getThread(params.sessionId);
          if (rt.runtimeState(params.sessionId).running) await rt.interrupt(params.sessionId);
          this.unfollow(params.sessionId);
          return {};
        }),
      )
      .onRequest(acp.methods.agent.session.list, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          const page = await rt.listThreads(params.cwd ? { workspacePath: path.resolve(params.cwd) } : {}, {
            limit: LIST_PAGE_SIZE,
            ...(params.cursor ? { cursor: params.cursor } : {}),
          });
          return { sessions: page.threads.map(sessionInfo), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
        }),
      )
      .onRequest(acp.methods.agent.session.setMode, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          if (!isModeId(params.modeId)) {
            throw acp.RequestError.invalidParams({ modeId: params.modeId }, `Unknown mode "${params.modeId}".`);
          }
          const thread = await rt.getThread(params.sessionId);
          const { configuration, mode } = modeSettings(params.modeId);
          await rt.configureThread(thread.id, configuration);
          if (thread.mode !== mode) await rt.setMode(thread.id, mode);
          return {};
        }),
      )
      .onRequest(acp.methods.agent.session.prompt, ({ params }) =>
        guarded(async () => {
          const rt = await this.ready;
          const session = this.sessions.get(params.sessionId) ?? this.follow(await rt.getThread(params.sessionId));
          const models = await this.models;
          const turn = await rt.startTurn(params.sessionId, { input: toInput(params.prompt) });
          session.ownTurns.add(turn.id);
          const ended = new Promise<TurnEnd>((resolve) => this.waiting.set(turn.id, resolve));
          // Known before the turn's first usage event is delivered (next tick at the earliest).
          const window = session.modeSource.configuration?.contextWindow ?? models.find((m) => m.id === turn.model)?.contextWindow;
          if (window) session.contextWindow = window;
          const outcome = stopReasonFor(await ended);
          if (typeof outcome === "object") throw turnFailedError(outcome.error);
          return { stopReason: outcome };
        }),
      )
      .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
        void this.ready.then((rt) => {
          if (!rt.runtimeState(params.sessionId).running) return;
          rt.interrupt(params.sessionId).catch((error: unknown) => this.log.debug({ err: error }, "cancel found no running turn"));
        });
      });
  }

  /** Follows a thread from now on: events appended before this call are not sent. */
  private follow(thread: Thread): FollowedSession {
    const known = this.sessions.get(thread.id);
    if (known) return known;
    const session: FollowedSession = {
      fromSeq: this.runtime.lastSeq(thread.id),
      mapper: new SessionUpdateMapper(thread.workspacePath),
      ownTurns: new Set(),
      modeId: modeIdOf(thread),
      modeSource: { mode: thread.mode, ...(thread.configuration ? { configuration: thread.configuration } : {}) },
      rejected: new Set(),
      stop: () => undefined,
    };
    const environment = clientEnvironment(
      this.capabilities,
      () => this.client,
      thread.id,
      (callId, terminalId) => this.send(thread.id, session.mapper.terminal(callId, terminalId)),
    );
    const release = this.runtime.follow(thread.id);
    const detach = environment ? this.runtime.attachEnvironment(thread.id, environment) : undefined;
    session.stop = () => {
      release();
      detach?.();
    };
    this.sessions.set(thread.id, session);
    return session;
  }

  private unfollow(threadId: string): void {
    this.sessions.get(threadId)?.stop();
    this.sessions.delete(threadId);
  }

  private deliver(event: RuntimeEvent): void {
    if (this.closed) return;
    const session = this.sessions.get(event.threadId);
    if (!session || event.seq <= session.fromSeq) return;
    const turnId = turnIdOf(event);
    for (const update of session.mapper.fromEvent(event, turnId !== undefined && session.ownTurns.has(turnId)))
      this.send(event.threadId, update);
    switch (event.type) {
      case "usage.updated":
        if (session.contextWindow) this.send(event.threadId, usageUpdate(event.data.usage, event.data.delta, session.contextWindow));
        break;
      case "thread.configured":
      case "thread.modeChanged": {
        if (event.type === "thread.configured") session.modeSource.configuration = event.data.configuration;
        else session.modeSource.mode = event.data.mode;
        const modeId = modeIdOf(session.modeSource);
        if (modeId !== session.modeId) {
          session.modeId = modeId;
          this.send(event.threadId, { sessionUpdate: "current_mode_update", currentModeId: modeId });
        }
        break;
      }
      case "turn.completed":
      case "turn.cancelled":
      case "turn.failed": {
        const resolve = this.waiting.get(event.data.turnId);
        if (!resolve) break;
        this.waiting.delete(event.data.turnId);
        session.ownTurns.delete(event.data.turnId);
        const end: TurnEnd =
          event.type === "turn.completed"
            ? { status: "completed" }
            : event.type === "turn.cancelled"
              ? { status: "cancelled" }
              : { status: "failed", error: event.data.error };
        // The answer goes out after every update of the turn.
        void this.sending.then(() => resolve(end));
        break;
      }
      case "thread.deleted":
        this.unfollow(event.threadId);
        break;
    }
  }

  private send(sessionId: string, update: acp.SessionUpdate): void {
    const client = this.client;
    if (!client || this.closed) return;
    this.sending = this.sending
      .then(() => client.notify(acp.methods.client.session.update, { sessionId, update }))
      .catch((error: unknown) => this.log.debug({ err: error }, "could not send session/update"));
  }

  private approver(): Approver {
    return {
      canAnswer: (threadId) => !this.closed && this.sessions.has(threadId),
      ask: async (request, signal) => {
        const session = this.sessions.get(request.threadId);
        const client = this.client;
        if (!session || !client) throw new Error("session not followed");
        if (session.rejected.has(request.scopeKey)) return "decline";
        await this.sending; // the tool call the question names is on the client first
        const response = await client.request(
          acp.methods.client.session.requestPermission,
          { sessionId: request.threadId, toolCall: await this.permissionToolCall(request), options: PERMISSION_OPTIONS },
          { cancellationSignal: signal, stopWaitingOnCancel: true },
        );
        const decision: ApprovalDecision = decisionFor(response.outcome);
        if (response.outcome.outcome === "selected" && response.outcome.optionId === "reject_always")
          session.rejected.add(request.scopeKey);
        return decision;
      },
    };
  }

  private async permissionToolCall(request: ApprovalRequest): Promise<acp.ToolCallUpdate> {
    const items = (await this.runtime.findTurn(request.turnId))?.items ?? [];
    const call = items.find((i) => i.type === "toolCall" && i.payload.callId === request.callId);
    if (call?.type !== "toolCall") return { toolCallId: request.callId, title: request.operation, status: "pending" };
    const args = call.payload.arguments ?? call.payload.argumentsText;
    return {
      toolCallId: request.callId,
      title: toolTitle(call.payload.toolName, args),
      kind: toolKind(call.payload.toolName),
      status: "pending",
      rawInput: args,
    };
  }
}

function turnIdOf(event: RuntimeEvent): string | undefined {
  switch (event.type) {
    case "item.started":
    case "item.completed":
      return event.data.item.turnId;
    case "item.delta":
      return event.data.turnId;
    default:
      return undefined;
  }
}
