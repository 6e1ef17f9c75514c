// The web client's state and everything that changes it: the relay's envelopes in, the user's
// actions out. Components read a snapshot and re-render when it changes.
import { RelayConnection, type ConnectionState, type Envelope } from "./connection.js";

export interface Persona {
  name: string;
  description?: string;
}

export interface Agent {
  id: string;
  name: string;
  online: boolean;
  personas: Persona[];
  conversations: string[];
}

export type Block =
  | { kind: "user"; text: string; attachments?: string[] }
  | { kind: "text"; text: string }
  | { kind: "thinking"; text: string }
  | { kind: "tool"; id: string; name: string; input: unknown; result?: string; isError?: boolean }
  | { kind: "result"; costUsd: number; inputTokens: number; outputTokens: number; durationMs: number; isError: boolean; cancelled: boolean }
  | { kind: "error"; message: string }
  /** A group-chat round: each mentioned persona answers in its own lane. */
  | { kind: "lanes"; lanes: Record<string, Block[]> };

export interface Conversation {
  id: string;
  agentId: string;
  kind: "chat" | "group";
  title: string;
  blocks: Block[];
  running: boolean;
  /** The agent's seq of the last output applied: catch-up asks for what came after it. */
  lastSeq: number;
  /** Its history was asked of the agent (or it was created here). */
  synced: boolean;
}

export interface Question {
  conversationId: string;
  requestId: string;
  prompt: string;
  choices: string[];
  multiSelect: boolean;
}

export interface Attachment {
  name: string;
  mime: string;
  base64: string;
}

export interface State {
  connection: ConnectionState | "loggedOut";
  username?: string;
  agents: Agent[];
  selectedAgent?: string;
  conversations: Record<string, Conversation>;
  selected?: string;
  questions: Question[];
  notice?: string;
}

type Listener = () => void;
type Data = Record<string, unknown>;

const KNOWN = "yeaft.conversations";

export class Store {
  private state: State = { connection: "connecting", agents: [], conversations: {}, questions: [] };
  private readonly listeners = new Set<Listener>();
  /**
   * Conversations whose history was asked of the agent and not answered yet, with the outputs
   * that came meanwhile: they are applied after the history, since one applied first would make
   * the history's older seqs look seen (after a reconnect, or in a second browser, live output
   * can come first).
   */
  private readonly catchingUp = new Map<string, Array<{ data: Data; seq: number | undefined }>>();
  private readonly relay = new RelayConnection({
    onMessage: (msg) => this.receive(msg),
    onState: (connection) => this.update({ connection }),
  });

  get snapshot(): State {
    return this.state;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The session cookie may still be valid: try it before asking for a password. */
  start(): void {
    this.relay.connect();
  }

  async login(username: string, password: string): Promise<string | undefined> {
    const res = await fetch("/api/auth/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username, password }),
    });
    if (!res.ok) return ((await res.json().catch(() => ({}))) as { error?: string }).error ?? `Login failed (${res.status}).`;
    this.relay.connect();
    return undefined;
  }

  async logout(): Promise<void> {
    await fetch("/api/auth/logout", { method: "POST" });
    this.relay.stop();
    this.state = { connection: "loggedOut", agents: [], conversations: {}, questions: [] };
    this.emit();
  }

  selectAgent(agentId: string): void {
    this.update({ selectedAgent: agentId });
  }

  select(conversationId: string): void {
    const conversation = this.state.conversations[conversationId];
    if (conversation && !conversation.synced && conversation.kind === "chat") {
      this.patch(conversationId, { synced: true });
      this.sync(conversation);
    }
    this.update({ selected: conversationId, selectedAgent: conversation?.agentId ?? this.state.selectedAgent });
  }

  newConversation(agentId: string, kind: "chat" | "group", provider = "switchyard"): string {
    const id = `${kind === "group" ? "group" : "conv"}_${randomId()}`;
    const title = kind === "group" ? "Group chat" : "New conversation";
    this.put({ id, agentId, kind, title, blocks: [], running: false, lastSeq: 0, synced: true });
    remember(id, { title, kind, agentId });
    // A group is pinned to its agent by its first message.
    if (kind === "chat") this.relay.send({ type: "create_conversation", agentId, conversationId: id, provider });
    this.select(id);
    return id;
  }

  send(conversationId: string, text: string, attachments: Attachment[] = []): void {
    const conversation = this.state.conversations[conversationId];
    if (!conversation || (!text.trim() && attachments.length === 0)) return;
    const files = attachments.map((a) => a.name);
    const blocks: Block[] = [...conversation.blocks, { kind: "user", text, ...(files.length ? { attachments: files } : {}) }];
    const title = conversation.blocks.length === 0 ? text.slice(0, 60) || conversation.title : conversation.title;
    if (conversation.kind === "group") {
      const personas = this.state.agents.find((a) => a.id === conversation.agentId)?.personas ?? [];
      const mentions = mentionsIn(text, personas);
      const answering = mentions.length ? mentions : personas.map((p) => p.name);
      blocks.push({ kind: "lanes", lanes: Object.fromEntries(answering.map((name) => [name, []])) });
      this.relay.send({
        type: "yeaft_session_chat",
        groupId: conversationId,
        agentId: conversation.agentId,
        text,
        mentions,
        attachments,
      });
    } else {
      this.relay.send({ type: "send_message", conversationId, text, attachments });
    }
    this.patch(conversationId, { blocks, running: true, title });
    remember(conversationId, { title, kind: conversation.kind, agentId: conversation.agentId });
  }

  cancel(conversationId: string): void {
    const conversation = this.state.conversations[conversationId];
    if (!conversation) return;
    this.relay.send({ type: "cancel_execution", conversationId, ...(conversation.kind === "group" ? { groupId: conversationId } : {}) });
  }

  answer(question: Question, answer: string): void {
    this.relay.send({ type: "ask_user_answer", conversationId: question.conversationId, requestId: question.requestId, answer });
    this.update({ questions: this.state.questions.filter((q) => q.requestId !== question.requestId) });
  }

  // ---- from the relay ----

  private receive(msg: Envelope): void {
    const conversationId = typeof msg.conversationId === "string" ? msg.conversationId : undefined;
    switch (msg.type) {
      case "auth_result":
        if (msg.success !== true) return this.update({ connection: "loggedOut" });
        this.update({ username: String(msg.username ?? "") });
        return this.catchUp();
      case "agent_list":
        return this.agentList(msg.agents);
      case "session_ready":
        return;
      case "claude_output": {
        if (!conversationId) return;
        const output = { data: msg.data as Data, seq: typeof msg.seq === "number" ? msg.seq : undefined };
        const held = this.catchingUp.get(conversationId);
        if (held) return void held.push(output);
        return this.output(conversationId, output.data, output.seq);
      }
      case "yeaft_output":
        if (!conversationId) return;
        return this.laneOutput(conversationId, String(msg.persona), msg.data as Data);
      case "sync_messages_result": {
        if (!conversationId) return;
        const messages = (msg.messages ?? []) as Array<{ seq: number; data: Data }>;
        const held = this.catchingUp.get(conversationId);
        const lastSeq = this.state.conversations[conversationId]?.lastSeq ?? 0;
        // Another browser's catch-up from further on (the agent's answers go to all of them):
        // it would leave a gap here, so it waits with the live outputs for this one's.
        if (held && typeof msg.afterSeq === "number" && msg.afterSeq > lastSeq) return void held.push(...messages);
        for (const m of messages) this.output(conversationId, m.data, m.seq);
        if (typeof msg.running === "boolean") this.patch(conversationId, { running: msg.running });
        return this.caughtUp(conversationId);
      }
      case "turn_completed":
      case "execution_cancelled":
        if (conversationId) this.patch(conversationId, { running: false });
        return;
      case "ask_user_question":
        if (!conversationId) return;
        return this.update({
          questions: [
            ...this.state.questions,
            {
              conversationId,
              requestId: String(msg.requestId),
              prompt: String(msg.prompt ?? ""),
              choices: Array.isArray(msg.choices) ? msg.choices.map(String) : [],
              multiSelect: msg.multiSelect === true,
            },
          ],
        });
      case "agent_status":
        if (typeof msg.message === "string") this.update({ notice: msg.message });
        else if (msg.state === "offline") this.update({ notice: "The agent is offline: your message waits for it." });
        return;
      case "error": {
        const text = String(msg.message ?? msg.code ?? "error");
        const conversation = conversationId ? this.state.conversations[conversationId] : undefined;
        if (conversation) {
          this.patch(conversation.id, { blocks: [...conversation.blocks, { kind: "error", message: text }], running: false });
          this.caughtUp(conversation.id);
        } else this.update({ notice: text });
        return;
      }
    }
  }

  private agentList(raw: unknown): void {
    const agents: Agent[] = (Array.isArray(raw) ? raw : []).map((a: Data) => ({
      id: String(a.id),
      name: String(a.name ?? a.id),
      online: a.online === true,
      personas: Array.isArray(a.personas) ? (a.personas as Persona[]) : [],
      conversations: Array.isArray(a.conversations) ? a.conversations.map(String) : [],
    }));
    const conversations = { ...this.state.conversations };
    const known = recalled();
    for (const agent of agents) {
      for (const id of agent.conversations) {
        if (conversations[id]) continue;
        const saved = known[id];
        conversations[id] = {
          id,
          agentId: agent.id,
          kind: saved?.kind ?? (id.startsWith("group_") ? "group" : "chat"),
          title: saved?.title ?? `Conversation ${id.slice(-6)}`,
          blocks: [],
          running: false,
          lastSeq: 0,
          synced: false,
        };
      }
    }
    const selectedAgent = agents.some((a) => a.id === this.state.selectedAgent) ? this.state.selectedAgent : agents[0]?.id;
    this.update({ agents, conversations, ...(selectedAgent ? { selectedAgent } : {}) });
  }

  /** After a reconnect: what each conversation missed, from the agent's history. */
  private catchUp(): void {
    for (const c of Object.values(this.state.conversations)) if (c.synced && c.kind === "chat") this.sync(c);
  }

  /** Asks the agent for the conversation's history after what is shown; outputs wait for it. */
  private sync(conversation: Conversation): void {
    if (!this.catchingUp.has(conversation.id)) this.catchingUp.set(conversation.id, []);
    this.relay.send({ type: "sync_messages", conversationId: conversation.id, afterSeq: conversation.lastSeq });
  }

  /** The history is in (or will not come): the outputs that waited for it, those not in it. */
  private caughtUp(conversationId: string): void {
    const held = this.catchingUp.get(conversationId) ?? [];
    this.catchingUp.delete(conversationId);
    for (const { data, seq } of held) this.output(conversationId, data, seq);
  }

  private output(conversationId: string, data: Data, seq: number | undefined): void {
    const conversation = this.state.conversations[conversationId];
    if (!conversation) return;
    // Seen already (live, then again in a catch-up, or the reverse).
    if (seq !== undefined && seq <= conversation.lastSeq) return;
    const blocks = applyData(conversation.blocks, data);
    this.patch(conversationId, {
      blocks,
      ...(seq !== undefined ? { lastSeq: seq } : {}),
      ...(data.type === "result" ? { running: false } : {}),
    });
  }

  private laneOutput(groupId: string, persona: string, data: Data): void {
    const conversation = this.state.conversations[groupId];
    if (!conversation) return;
    const blocks = [...conversation.blocks];
    let at = blocks.findLastIndex((b) => b.kind === "lanes");
    if (at === -1) {
      blocks.push({ kind: "lanes", lanes: {} });
      at = blocks.length - 1;
    }
    const round = blocks[at] as Extract<Block, { kind: "lanes" }>;
    blocks[at] = { kind: "lanes", lanes: { ...round.lanes, [persona]: applyData(round.lanes[persona] ?? [], data) } };
    this.patch(groupId, { blocks });
  }

  // ---- plumbing ----

  private put(conversation: Conversation): void {
    this.update({ conversations: { ...this.state.conversations, [conversation.id]: conversation } });
  }

  private patch(id: string, change: Partial<Conversation>): void {
    const conversation = this.state.conversations[id];
    if (conversation) this.put({ ...conversation, ...change });
  }

  private update(change: Partial<State>): void {
    this.state = { ...this.state, ...change };
    this.emit();
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}

/** A stream-json message (Claude's shapes) applied to a conversation's blocks. */
export function applyData(blocks: Block[], data: Data): Block[] {
  const next = [...blocks];
  const content = ((data.message as Data | undefined)?.content ?? []) as Data[];
  if (data.type === "assistant") {
    for (const part of content) {
      const last = next[next.length - 1];
      if (part.type === "text") {
        if (last?.kind === "text") next[next.length - 1] = { kind: "text", text: last.text + String(part.text) };
        else next.push({ kind: "text", text: String(part.text) });
      } else if (part.type === "thinking") {
        if (last?.kind === "thinking") next[next.length - 1] = { kind: "thinking", text: last.text + String(part.thinking) };
        else next.push({ kind: "thinking", text: String(part.thinking) });
      } else if (part.type === "tool_use") {
        next.push({ kind: "tool", id: String(part.id), name: String(part.name), input: part.input });
      }
    }
  } else if (data.type === "user") {
    for (const part of content) {
      if (part.type === "tool_result") {
        const at = next.findLastIndex((b) => b.kind === "tool" && b.id === part.tool_use_id);
        const result = typeof part.content === "string" ? part.content : JSON.stringify(part.content);
        if (at !== -1) next[at] = { ...(next[at] as Extract<Block, { kind: "tool" }>), result, isError: part.is_error === true };
      } else if (part.type === "text") {
        const attachments = Array.isArray(data.attachments) ? data.attachments.map(String) : [];
        next.push({ kind: "user", text: String(part.text), ...(attachments.length ? { attachments } : {}) });
      }
    }
  } else if (data.type === "result") {
    const usage = (data.usage ?? {}) as Data;
    next.push({
      kind: "result",
      costUsd: Number(data.total_cost_usd ?? 0),
      inputTokens: Number(usage.input_tokens ?? 0),
      outputTokens: Number(usage.output_tokens ?? 0),
      durationMs: Number(data.duration_ms ?? 0),
      isError: data.is_error === true,
      cancelled: data.cancelled === true,
    });
  } else if (data.type === "system" && data.subtype === "error") {
    next.push({ kind: "error", message: String(data.message ?? "error") });
  }
  return next;
}

/** The personas @mentioned in `text`, in order, once each. */
export function mentionsIn(text: string, personas: Persona[]): string[] {
  const names = new Set(personas.map((p) => p.name));
  const found = [...text.matchAll(/@([\w.-]+)/g)].map((m) => m[1]!).filter((name) => names.has(name));
  return [...new Set(found)];
}

function randomId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
}

type Remembered = Record<string, { title: string; kind: "chat" | "group"; agentId: string }>;

/** Titles and kinds of this browser's conversations (the relay knows only their ids). */
function recalled(): Remembered {
  try {
    return JSON.parse(localStorage.getItem(KNOWN) ?? "{}") as Remembered;
  } catch {
    return {};
  }
}

function remember(id: string, entry: Remembered[string]): void {
  localStorage.setItem(KNOWN, JSON.stringify({ ...recalled(), [id]: entry }));
}
