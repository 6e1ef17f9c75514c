// The Yeaft relay's connections: agents authenticate by challenge with their owner's secret,
// browsers with a token; then the relay routes envelopes (a router, not a brain). A conversation
// is pinned to the agent that created it; browser messages go to that agent, agent messages to
// its owner's browsers only; an agent speaks only for conversations it owns. Messages for an
// agent that is away wait in a bounded buffer and are flushed in order when it registers again.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { writeFileDurably } from "../../durable-file.js";
import type { WebSocket } from "ws";
import type { Logger } from "../../log.js";
import { errorEnvelope } from "./errors.js";
import { ALIASES, BUFFER_LIMITS, CLOSE_POLICY, CONVERSATION_EXEMPT, Envelope, TERMINAL_TYPES, TO_AGENT, TO_WEB } from "./protocol.js";
import type { UserStore } from "./users.js";

interface AgentEntry {
  id: string;
  owner: string;
  name: string;
  ws?: WebSocket;
  buffer: Array<{ text: string; type: string }>;
  /** The group-chat personas the agent announced (yeaft_personas). */
  personas?: unknown;
  bufferedBytes: number;
  dropped: number;
}

export interface RelayOptions {
  users: UserStore;
  log: Logger;
  /** Seconds an agent has to answer auth_required. */
  authTimeoutMs: number;
  /** Where the conversation pins are kept, so that a restarted relay routes as before. */
  pinsFile?: string;
}

type Pin = { agentId: string; owner: string };

export class Relay {
  private readonly agents = new Map<string, AgentEntry>();
  private readonly conversations: Map<string, Pin>;
  private readonly browsers = new Map<string, Set<WebSocket>>();

  constructor(private readonly opts: RelayOptions) {
    const saved =
      opts.pinsFile && existsSync(opts.pinsFile) ? (JSON.parse(readFileSync(opts.pinsFile, "utf8")) as Record<string, Pin>) : {};
    this.conversations = new Map(Object.entries(saved));
  }

  private pin(conversationId: string, pin: Pin | undefined): void {
    if (pin) this.conversations.set(conversationId, pin);
    else this.conversations.delete(conversationId);
    if (this.opts.pinsFile) writeFileDurably(this.opts.pinsFile, JSON.stringify(Object.fromEntries(this.conversations)), 0o600);
  }

  // ---- agents ----

  acceptAgent(ws: WebSocket, query: URLSearchParams): void {
    const tempId = randomBytes(8).toString("hex");
    const instanceId = query.get("id") ?? tempId;
    const name = query.get("name") ?? instanceId;
    let entry: AgentEntry | undefined;
    const timer = setTimeout(() => ws.close(CLOSE_POLICY, "Authentication timed out"), this.opts.authTimeoutMs);
    send(ws, { type: "auth_required", tempId });
    ws.on("message", (raw) => {
      const text = raw.toString();
      const msg = parse(text);
      if (!msg) return send(ws, errorEnvelope("invalid_json", "Messages are JSON objects with a type."));
      if (!entry) {
        if (msg.type !== "auth" || msg.tempId !== tempId) return ws.close(CLOSE_POLICY, "Authenticate first");
        clearTimeout(timer);
        const owner = typeof msg.secret === "string" ? this.opts.users.byAgentSecret(msg.secret) : undefined;
        if (!owner) return ws.close(CLOSE_POLICY, "Invalid agent secret");
        entry = this.register(ws, owner.username, instanceId, name);
        return;
      }
      this.fromAgent(entry, ws, msg, text);
    });
    ws.on("close", () => {
      clearTimeout(timer);
      if (entry?.ws === ws) {
        entry.ws = undefined;
        this.agentListChanged(entry.owner);
      }
    });
  }

  private register(ws: WebSocket, owner: string, instanceId: string, name: string): AgentEntry {
    const id = `${owner}:${instanceId}`;
    const entry = this.agentEntry(id, owner, name);
    if (entry.ws && entry.ws !== ws) entry.ws.close(CLOSE_POLICY, "Superseded by a newer connection of the same agent");
    entry.ws = ws;
    entry.name = name;
    send(ws, { type: "registered", agentId: id });
    // What waited while it was away, in order.
    for (const { text } of entry.buffer.splice(0)) ws.send(text);
    entry.bufferedBytes = 0;
    this.opts.log.info({ agentId: id }, "yeaft agent registered");
    this.agentListChanged(owner);
    return entry;
  }

  private fromAgent(entry: AgentEntry, ws: WebSocket, msg: Envelope, raw: string): void {
    if (entry.ws !== ws) return; // superseded
    if (!TO_WEB.has(msg.type)) return send(ws, errorEnvelope("unknown_type", `The relay does not route "${msg.type}" from agents.`));
    if (msg.type === "yeaft_personas") {
      entry.personas = msg.personas;
      this.agentListChanged(entry.owner);
    }
    const conversationId =
      typeof msg.conversationId === "string" ? msg.conversationId : typeof msg.groupId === "string" ? msg.groupId : undefined;
    if (!CONVERSATION_EXEMPT.has(msg.type)) {
      const pinned = conversationId ? this.conversations.get(conversationId) : undefined;
      if (pinned?.agentId !== entry.id) {
        return send(
          ws,
          errorEnvelope("not_your_conversation", `Conversation ${conversationId ?? "(none)"} does not belong to this agent.`),
        );
      }
    }
    if (msg.type === "conversation_deleted" && conversationId) this.pin(conversationId, undefined);
    // The agent's own text with its id appended (a later duplicate key wins in JSON): the relay
    // does not re-serialize what it does not read.
    this.toBrowsers(entry.owner, `${raw.trimEnd().slice(0, -1)},"agentId":${JSON.stringify(entry.id)}}`);
  }

  // ---- browsers ----

  acceptBrowser(ws: WebSocket, username: string): void {
    let set = this.browsers.get(username);
    if (!set) this.browsers.set(username, (set = new Set()));
    set.add(ws);
    send(ws, { type: "auth_result", success: true, username });
    send(ws, this.agentList(username));
    ws.on("message", (raw) => {
      const text = raw.toString();
      const msg = parse(text);
      if (!msg) return send(ws, errorEnvelope("invalid_json", "Messages are JSON objects with a type."));
      this.fromBrowser(username, ws, msg, text);
    });
    ws.on("close", () => set.delete(ws));
  }

  private fromBrowser(username: string, ws: WebSocket, msg: Envelope, raw: string): void {
    const type = ALIASES[msg.type] ?? msg.type;
    if (type === "get_agents") return send(ws, this.agentList(username));
    if (type === "client_hello") return send(ws, { type: "client_hello_ack" });
    if (!TO_AGENT.has(type)) return send(ws, errorEnvelope("unknown_type", `The relay does not route "${msg.type}".`));
    let agentId: string | undefined;
    let text = raw;
    // A group chat is pinned like a conversation, by its groupId, on its first message.
    if (type === "yeaft_session_chat" && typeof msg.groupId === "string" && !this.conversations.has(msg.groupId)) {
      const target = typeof msg.agentId === "string" ? msg.agentId : this.defaultAgent(username);
      if (!target || this.agents.get(target)?.owner !== username) {
        return send(ws, errorEnvelope("agent_not_found", "Name one of your agents (agentId) to start a group chat on."));
      }
      this.pin(msg.groupId, { agentId: target, owner: username });
    }
    if (type === "create_conversation") {
      agentId = typeof msg.agentId === "string" ? msg.agentId : this.defaultAgent(username);
      if (!agentId || this.agents.get(agentId)?.owner !== username) {
        return send(ws, errorEnvelope("agent_not_found", "Name one of your agents (agentId) to create a conversation on."));
      }
      const conversationId = typeof msg.conversationId === "string" ? msg.conversationId : `conv_${randomBytes(8).toString("hex")}`;
      if (this.conversations.has(conversationId))
        return send(ws, errorEnvelope("conversation_exists", `Conversation ${conversationId} exists.`));
      this.pin(conversationId, { agentId, owner: username });
      text = JSON.stringify({ ...msg, conversationId });
    } else {
      const conversationId =
        typeof msg.conversationId === "string" ? msg.conversationId : typeof msg.groupId === "string" ? msg.groupId : undefined;
      const pinned = conversationId ? this.conversations.get(conversationId) : undefined;
      if (!pinned || pinned.owner !== username) {
        return send(
          ws,
          errorEnvelope("conversation_not_found", `No conversation ${conversationId ?? "(none)"} of yours.`, { conversationId }),
        );
      }
      agentId = pinned.agentId;
    }
    this.toAgent(this.agentEntry(agentId, username), text, type, ws);
  }

  /** The agent's entry; one a pinned conversation names may not have registered since the relay started. */
  private agentEntry(id: string, owner: string, name = id): AgentEntry {
    let entry = this.agents.get(id);
    if (!entry) {
      entry = { id, owner, name, buffer: [], bufferedBytes: 0, dropped: 0 };
      this.agents.set(id, entry);
    }
    return entry;
  }

  private defaultAgent(username: string): string | undefined {
    for (const a of this.agents.values()) if (a.owner === username && a.ws) return a.id;
    return undefined;
  }

  /** Live, or buffered within bounds while the agent is away (oldest non-terminal dropped first). */
  private toAgent(agent: AgentEntry, text: string, type: string, from: WebSocket): void {
    if (agent.ws) return agent.ws.send(text);
    agent.buffer.push({ text, type });
    agent.bufferedBytes += Buffer.byteLength(text);
    let dropped = 0;
    while (agent.buffer.length > BUFFER_LIMITS.messages || agent.bufferedBytes > BUFFER_LIMITS.bytes) {
      const at = agent.buffer.findIndex((m) => !TERMINAL_TYPES.has(m.type));
      const [gone] = agent.buffer.splice(at === -1 ? 0 : at, 1);
      agent.bufferedBytes -= Buffer.byteLength(gone!.text);
      dropped++;
    }
    agent.dropped += dropped;
    send(from, {
      type: "agent_status",
      agentId: agent.id,
      state: "offline",
      queued: agent.buffer.length,
      ...(dropped ? { dropped, message: `The agent is away: ${dropped} older message(s) dropped from its queue.` } : {}),
    });
  }

  private toBrowsers(owner: string, msg: Record<string, unknown> | string): void {
    // Encoded once for all of the owner's browsers, sent as text frames.
    const bytes = Buffer.from(typeof msg === "string" ? msg : JSON.stringify(msg));
    for (const ws of this.browsers.get(owner) ?? []) ws.send(bytes, { binary: false });
  }

  private agentList(owner: string): Envelope {
    const agents = [...this.agents.values()]
      .filter((a) => a.owner === owner)
      .map((a) => ({
        id: a.id,
        name: a.name,
        online: a.ws !== undefined,
        ...(a.personas ? { personas: a.personas } : {}),
        conversations: [...this.conversations].filter(([, c]) => c.agentId === a.id).map(([id]) => id),
      }));
    return { type: "agent_list", agents };
  }

  private agentListChanged(owner: string): void {
    this.toBrowsers(owner, this.agentList(owner));
  }
}

function parse(text: string): Envelope | undefined {
  try {
    const parsed = Envelope.safeParse(JSON.parse(text));
    return parsed.success ? (parsed.data as Envelope) : undefined;
  } catch {
    return undefined;
  }
}

export function send(ws: WebSocket, msg: Record<string, unknown>): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
}
