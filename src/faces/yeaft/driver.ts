// The Yeaft agent driver: connects to a relay, authenticates with its owner's secret, and runs
// the browser's conversations as runtime threads (any backend), their turns streamed back as
// `claude_output`. Approvals become `ask_user_question`. While the relay is away it reconnects
// with backoff and keeps its outbound messages in a bounded buffer, flushed after `registered`.
import { randomBytes } from "node:crypto";
import os from "node:os";
import WebSocket from "ws";
import type { TokenUsage } from "../../domain/model.js";
import type { Logger } from "../../log.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { watchTurn } from "../turn-watch.js";
import { errorEnvelope } from "./errors.js";
import { ALIASES, BUFFER_LIMITS, CLOSE_POLICY, Envelope, TERMINAL_TYPES } from "./protocol.js";
import { backendOf, historyReplay, inputOf, outputOf, resultOf } from "./wire.js";
import type { InputPart } from "../../domain/model.js";
import type { UserQuestion } from "../../tools/tool.js";

/** A group-chat persona: its own thread per group, system prompt and model. */
export interface Persona {
  name: string;
  description?: string;
  systemPrompt: string;
  model?: string;
}

export interface DriverOptions {
  server: string;
  secret: string;
  personas?: Persona[];
  /** Stable id of this agent instance (a newer connection with it supersedes the older). */
  instanceId?: string;
  name?: string;
  /** How often the relay is pinged (default 30 s). */
  pingIntervalMs?: number;
  /** A relay silent (no pong, no message) this long is dropped and reconnected to (default 180 s). */
  deadAfterMs?: number;
}

const ORIGIN_CHANNEL = "yeaft";
const RECONNECT_MAX_MS = 30_000;

export class AgentDriver {
  private ws: WebSocket | undefined;
  private registered = false;
  private closed = false;
  private reconnectMs = 1_000;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly outbox: Array<{ text: string; type: string }> = [];
  private outboxBytes = 0;
  /** conversationId → threadId */
  private readonly conversations = new Map<string, string>();
  private readonly questions = new Map<string, (answer: string) => void>();
  private readonly detach: Array<() => void> = [];

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly opts: DriverOptions,
    private readonly log: Logger,
  ) {
    this.detach.push(
      runtime.approvals.addApprover({
        canAnswer: (threadId) => this.registered && this.conversationOf(threadId) !== undefined,
        ask: async (request, signal) => {
          const prompt = `Allow ${request.approvalType}: ${request.operation}?`;
          const answer = await this.askBrowser(request.threadId, { prompt, choices: ["Allow", "Deny"], multiSelect: false }, signal);
          return /^(allow|yes|y|accept|approve)/i.test(answer.trim()) ? "accept" : "decline";
        },
        question: (threadId, question, signal) => this.askBrowser(threadId, question, signal),
      }),
    );
  }

  /** An ask_user_question to the conversation's browsers; resolves with the first answer. */
  private askBrowser(threadId: string, question: UserQuestion, signal: AbortSignal): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const requestId = `q-${randomBytes(6).toString("hex")}`;
      const onAbort = (): void => {
        this.questions.delete(requestId);
        reject(new Error("cancelled"));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.questions.set(requestId, (answer) => {
        signal.removeEventListener("abort", onAbort);
        resolve(answer);
      });
      this.send({ type: "ask_user_question", conversationId: this.conversationOf(threadId), requestId, ...question });
    });
  }

  start(): void {
    this.connect();
  }

  private connect(): void {
    const url = new URL(this.opts.server);
    url.searchParams.set("type", "agent");
    url.searchParams.set("id", this.opts.instanceId ?? os.hostname());
    url.searchParams.set("name", this.opts.name ?? os.hostname());
    url.searchParams.set("platform", process.platform);
    const ws = new WebSocket(url);
    this.ws = ws;
    // Liveness: a relay that stops answering (a half-open connection) is dropped and reconnected to.
    let heard = Date.now();
    const alive = (): void => void (heard = Date.now());
    const heartbeat = setInterval(() => {
      if (Date.now() - heard > (this.opts.deadAfterMs ?? 180_000)) {
        this.log.warn("the relay stopped answering; reconnecting");
        ws.terminate();
      } else if (ws.readyState === WebSocket.OPEN) ws.ping();
    }, this.opts.pingIntervalMs ?? 30_000);
    heartbeat.unref();
    ws.on("open", alive);
    ws.on("pong", alive);
    ws.on("message", (raw) => {
      alive();
      this.onMessage(ws, raw.toString());
    });
    ws.on("close", (code, reason) => {
      clearInterval(heartbeat);
      this.registered = false;
      if (this.closed) return;
      if (code === CLOSE_POLICY) {
        this.log.error({ reason: reason.toString() }, "the relay refused this agent; not reconnecting");
        return;
      }
      const wait = this.reconnectMs;
      this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS);
      // Not unref'd: while the relay is away this timer is what keeps the agent running.
      this.reconnectTimer = setTimeout(() => this.connect(), wait);
    });
    ws.on("error", (error) => this.log.debug({ err: error }, "relay connection error"));
  }

  private onMessage(ws: WebSocket, text: string): void {
    let msg: Envelope;
    try {
      msg = Envelope.parse(JSON.parse(text)) as Envelope;
    } catch {
      return;
    }
    if (msg.type === "auth_required") {
      ws.send(
        JSON.stringify({
          type: "auth",
          tempId: msg.tempId,
          secret: this.opts.secret,
          capabilities: ["plaintext-ok"],
          version: "switchyard",
          platform: process.platform,
        }),
      );
      return;
    }
    if (msg.type === "registered") {
      this.registered = true;
      this.reconnectMs = 1_000;
      this.log.info({ agentId: msg.agentId }, "registered with the yeaft relay");
      for (const { text: queued } of this.outbox.splice(0)) ws.send(queued);
      this.outboxBytes = 0;
      const personas = (this.opts.personas ?? []).map(({ name, description }) => ({ name, ...(description ? { description } : {}) }));
      ws.send(JSON.stringify({ type: "yeaft_personas", personas }));
      return;
    }
    void this.handle(msg).catch((error: unknown) =>
      this.send(
        errorEnvelope("turn_failed", error instanceof Error ? error.message : String(error), { conversationId: msg.conversationId }),
      ),
    );
  }

  private async handle(msg: Envelope): Promise<void> {
    const type = ALIASES[msg.type] ?? msg.type;
    const conversationId = typeof msg.conversationId === "string" ? msg.conversationId : undefined;
    switch (type) {
      case "create_conversation": {
        const options = (msg.options ?? {}) as Record<string, unknown>;
        const backend = backendOf(typeof msg.provider === "string" ? msg.provider : undefined, options);
        if (!backend) return this.send(errorEnvelope("turn_failed", `Unknown provider "${String(msg.provider)}".`, { conversationId }));
        const thread = this.runtime.startThread({
          workspacePath: typeof msg.workDir === "string" ? msg.workDir : process.cwd(),
          originChannel: ORIGIN_CHANNEL,
          ...(conversationId ? { channelContext: `conversation:${conversationId}` } : {}),
          configuration: { backend },
          metadata: { yeaft: { conversationId } },
        });
        this.conversations.set(conversationId!, thread.id);
        return this.send({ type: "session_ready", conversationId, sessionId: thread.id, provider: msg.provider ?? "switchyard" });
      }
      case "send_message": {
        const threadId = await this.threadOf(conversationId);
        const text = typeof msg.text === "string" ? msg.text : typeof msg.prompt === "string" ? msg.prompt : "";
        const input = inputOf(text, msg.attachments);
        if ("problem" in input) return this.send(errorEnvelope("invalid_attachment", input.problem, { conversationId }));
        // `seq` is the output's place in the agent's history: a browser that reconnects asks for what came after it.
        await this.runTurn(threadId, input, (data, seq) =>
          this.send({ type: "claude_output", conversationId, data, ...(seq ? { seq } : {}) }),
        );
        return this.send({ type: "turn_completed", conversationId });
      }
      case "sync_messages": {
        // The agent's store is the history: everything after the browser's last seq, in order.
        const threadId = await this.threadOf(conversationId);
        const afterSeq = typeof msg.afterSeq === "number" ? msg.afterSeq : 0;
        const messages: Array<{ seq: number; data: Record<string, unknown> }> = [];
        const historyOf = historyReplay(threadId);
        let last = afterSeq;
        for (
          let page = await this.runtime.eventsAfter(threadId, afterSeq);
          page.length > 0;
          page = await this.runtime.eventsAfter(threadId, last)
        ) {
          for (const event of page) {
            last = event.seq;
            for (const data of historyOf(event)) messages.push({ seq: event.seq, data });
          }
        }
        const running = this.runtime.runtimeState(threadId).running;
        return this.send({ type: "sync_messages_result", conversationId, afterSeq, messages, lastSeq: last, running });
      }
      case "yeaft_session_chat":
        return this.groupChat(msg);
      case "resume_conversation": {
        const thread = await this.runtime.findThread(String(msg.sessionId));
        if (!thread || thread.originChannel !== ORIGIN_CHANNEL) {
          return this.send(
            errorEnvelope("conversation_not_found", `No session ${String(msg.sessionId)} on this agent.`, { conversationId }),
          );
        }
        this.conversations.set(conversationId!, thread.id);
        return this.send({ type: "session_ready", conversationId, sessionId: thread.id, resumed: true });
      }
      case "list_history_sessions": {
        const workDir = typeof msg.workDir === "string" ? msg.workDir : undefined;
        const listed = await this.runtime.listThreads(
          { originChannel: ORIGIN_CHANNEL, ...(workDir ? { workspacePath: workDir } : {}) },
          { limit: 200 },
        );
        const sessions = listed.threads
          .filter((t) => t.channelContext?.startsWith("conversation:"))
          .map((t) => ({ sessionId: t.id, workDir: t.workspacePath, title: t.displayName ?? null, updatedAt: t.lastActiveAt }));
        return this.send({ type: "history_sessions_list", provider: msg.provider ?? "switchyard", sessions });
      }
      case "list_folders": {
        const folders = [
          ...new Set(
            (await this.runtime.listThreads({ originChannel: ORIGIN_CHANNEL }, { limit: 1000 })).threads.map((t) => t.workspacePath),
          ),
        ];
        return this.send({ type: "folders_list", provider: msg.provider ?? "switchyard", folders });
      }
      case "cancel_execution": {
        // A group chat's round is cancelled on every persona's thread.
        const threads = typeof msg.groupId === "string" ? await this.groupThreads(msg.groupId) : [await this.threadOf(conversationId)];
        await Promise.all(threads.filter((id) => this.runtime.runtimeState(id).running).map((id) => this.runtime.interrupt(id)));
        return;
      }
      case "ask_user_answer": {
        const answer = this.questions.get(String(msg.requestId));
        this.questions.delete(String(msg.requestId));
        answer?.(String(msg.answer ?? ""));
        return;
      }
      case "delete_conversation": {
        await this.runtime.deleteThread(await this.threadOf(conversationId));
        this.conversations.delete(conversationId!);
        return this.send({ type: "conversation_deleted", conversationId });
      }
      default:
        return this.send(errorEnvelope("unknown_type", `This agent does not handle "${msg.type}" yet.`, { conversationId }));
    }
  }

  /** Runs one turn on the thread; each claude_output data goes to `emit`, the result last. */
  private async runTurn(threadId: string, input: InputPart[], emit: (data: Record<string, unknown>, seq?: number) => void): Promise<void> {
    const started = performance.now();
    let usage: TokenUsage | undefined;
    const { ended } = await watchTurn(this.runtime, threadId, { input }, (event) => {
      for (const data of outputOf(event)) emit(data, event.seq);
      if (event.type === "usage.updated") usage = event.data.usage;
    });
    const end = await ended;
    const outcome =
      end.type === "turn.completed"
        ? { status: "completed" as const }
        : end.type === "turn.cancelled"
          ? { status: "cancelled" as const }
          : { status: "failed" as const, error: end.data.error };
    // With the seq of the turn's end, which a catch-up replays as this same result.
    emit(resultOf(outcome, threadId, performance.now() - started, usage), end.seq);
  }

  /**
   * A group chat: the mentioned personas (all when none is) answer in parallel, each on its own
   * thread for the group, their output tagged with the persona.
   */
  private async groupChat(msg: Envelope): Promise<void> {
    const groupId = String(msg.groupId);
    const personas = this.opts.personas ?? [];
    const mentions = Array.isArray(msg.mentions) ? msg.mentions.map(String) : [];
    const chosen = mentions.length > 0 ? personas.filter((p) => mentions.includes(p.name)) : personas;
    if (chosen.length === 0) {
      return this.send(
        errorEnvelope(
          "persona_not_found",
          mentions.length ? `No persona named ${mentions.join(", ")} here.` : "This agent has no personas.",
          { groupId },
        ),
      );
    }
    const input = inputOf(typeof msg.text === "string" ? msg.text : "", msg.attachments);
    if ("problem" in input) return this.send(errorEnvelope("invalid_attachment", input.problem, { groupId, conversationId: groupId }));
    await Promise.all(
      chosen.map(async (persona) =>
        this.runTurn(await this.personaThread(groupId, persona), input, (data) =>
          this.send({ type: "yeaft_output", conversationId: groupId, groupId, persona: persona.name, data }),
        ),
      ),
    );
    this.send({ type: "turn_completed", conversationId: groupId, groupId });
  }

  private async groupThreads(groupId: string): Promise<string[]> {
    return (await this.runtime.listThreads({ originChannel: ORIGIN_CHANNEL }, { limit: 1000 })).threads
      .filter((t) => t.channelContext?.startsWith(`group:${groupId}:`))
      .map((t) => t.id);
  }

  private async personaThread(groupId: string, persona: Persona): Promise<string> {
    const channelContext = `group:${groupId}:${persona.name}`;
    const existing = (await this.runtime.listThreads({ originChannel: ORIGIN_CHANNEL, channelContext }, { limit: 1 })).threads[0];
    if (existing) return existing.id;
    const thread = this.runtime.startThread({
      workspacePath: process.cwd(),
      originChannel: ORIGIN_CHANNEL,
      channelContext,
      displayName: `${persona.name} · ${groupId}`,
      configuration: {
        backend: { type: "builtin" },
        systemPrompt: persona.systemPrompt,
        ...(persona.model ? { model: persona.model } : {}),
      },
      metadata: { yeaft: { groupId, persona: persona.name } },
    });
    return thread.id;
  }

  /** The conversation's thread: known, or found in the store (the agent restarted since). */
  private async threadOf(conversationId: string | undefined): Promise<string> {
    let threadId = conversationId ? this.conversations.get(conversationId) : undefined;
    if (!threadId && conversationId) {
      const context = `conversation:${conversationId}`;
      threadId = (await this.runtime.listThreads({ originChannel: ORIGIN_CHANNEL, channelContext: context }, { limit: 1 })).threads[0]?.id;
      if (threadId) this.conversations.set(conversationId, threadId);
    }
    if (!threadId) throw new Error(`No conversation ${conversationId ?? "(none)"} on this agent.`);
    return threadId;
  }

  private conversationOf(threadId: string): string | undefined {
    for (const [conversationId, id] of this.conversations) if (id === threadId) return conversationId;
    return undefined;
  }

  /** Sends now, or keeps it (bounded, oldest non-terminal dropped first) until registered again. */
  private send(msg: Record<string, unknown>): void {
    const text = JSON.stringify(msg);
    if (this.registered && this.ws?.readyState === WebSocket.OPEN) return this.ws.send(text);
    this.outbox.push({ text, type: String(msg.type) });
    this.outboxBytes += Buffer.byteLength(text);
    while (this.outbox.length > BUFFER_LIMITS.messages || this.outboxBytes > BUFFER_LIMITS.bytes) {
      const at = this.outbox.findIndex((m) => !TERMINAL_TYPES.has(m.type));
      const [gone] = this.outbox.splice(at === -1 ? 0 : at, 1);
      this.outboxBytes -= Buffer.byteLength(gone!.text);
      this.log.warn({ type: gone!.type }, "relay away: dropped the oldest queued message");
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.detach.forEach((undo) => undo());
    this.ws?.close();
  }
}
