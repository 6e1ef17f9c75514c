// The Yeaft relay's connections: agents authenticate by challenge with their owner's secret,
// browsers with a token; then the relay routes envelopes (a router, not a brain). A conversation
// is pinned to the agent that created it; browser messages go to that agent, agent messages to
// its owner's browsers only; an agent speaks only for conversations it owns. Messages for an
// agent that is away wait in a bounded queue and are sent in order when it registers again.
//
// What routes live in the store's face state, so that several relay processes on one
// PostgreSQL serve as one relay: the agents (held while connected: presence), the pins (routes)
// and each agent's queue. A message for an agent connected to another relay goes through its
// queue; a broadcast tells that relay to take it, tells every relay what to send its browsers,
// and that an agent list changed. One process (SQLite): the same records, nobody to broadcast to.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync } from "node:fs";
import type { WebSocket } from "ws";
import { Coalesced } from "../../coalesced.js";
import type { Logger } from "../../log.js";
import type { FaceRecord, FaceState } from "../../store/face-state.js";
import { errorEnvelope } from "./errors.js";
import { ALIASES, BUFFER_LIMITS, CLOSE_POLICY, CONVERSATION_EXEMPT, Envelope, TERMINAL_TYPES, TO_AGENT, TO_WEB } from "./protocol.js";
import type { UserStore } from "./users.js";

/** Records: agent id → AgentRecord, held by the relay it is connected to. */
const AGENTS = "yeaft/agents";
/** Records: conversation (or group) id → Pin. */
const PINS = "yeaft/pins";
const queueOf = (agentId: string): string => `yeaft/queue/${agentId}`;
const CHANNEL = "yeaft";
/** How often a relay of a cluster looks for agents whose relay is gone. */
const PRESENCE_LOOK_MS = 2_000;

interface AgentRecord {
  owner: string;
  name: string;
  /** The group-chat personas the agent announced (yeaft_personas). */
  personas?: unknown;
}

type Pin = { agentId: string; owner: string };

/** The agent an AGENTS record holds, and the pin a PINS record holds (this module writes both). */
const agentIn = (record: FaceRecord): AgentRecord => JSON.parse(record.value) as AgentRecord;
const pinIn = (record: FaceRecord): Pin => JSON.parse(record.value) as Pin;

/** What one relay tells the others. */
type Broadcast =
  /** An agent's message (final text) for its owner's browsers. */
  | { kind: "web"; owner: string; text: string }
  | { kind: "agentsChanged"; owner: string }
  /** A message waits in the agent's queue: the relay it is connected to sends it. */
  | { kind: "queued"; agentId: string }
  /** The agent connected to the sender: a connection elsewhere is superseded. */
  | { kind: "registered"; agentId: string }
  | { kind: "unpinned"; conversationId: string };

/** An agent connected to this relay. */
interface ConnectedAgent {
  id: string;
  record: AgentRecord;
  ws: WebSocket;
  /** It was told `registered`: what waits in its queue may be sent. */
  registered: boolean;
  /** Its queue was emptied since it registered: messages from here may go straight to it. */
  live: boolean;
  /** Takes its queue (see `takeQueue`). */
  queue: Coalesced;
}

export interface RelayOptions {
  users: UserStore;
  state: FaceState;
  log: Logger;
  /** How long (ms) an agent has to answer auth_required. */
  authTimeoutMs: number;
  /** Pins an older relay kept in a file: moved into the store once. */
  legacyPinsFile?: string;
}

export class Relay {
  private readonly connected = new Map<string, ConnectedAgent>();
  private readonly browsers = new Map<string, Set<WebSocket>>();
  /** Pins read so far (a pin names its agent for good; other relays' unpins reach here). */
  private readonly pins = new Map<string, Pin>();
  private readonly state: FaceState;
  private outbox: string[] = [];
  private sending: Promise<void> = Promise.resolve();
  /** Which agents the last agent list sent here showed online (see `watchPresence`). */
  private readonly online = new Set<string>();
  private presenceTimer: NodeJS.Timeout | undefined;
  /**
   * Per owner, the reading of the agent list its browsers are sent: once more after the read in
   * flight, never two at once (two reads on two connections could land in either order, and a
   * browser left with the older list would show an agent that came back as away).
   */
  private readonly listings = new Map<string, Coalesced>();
  private closed = false;

  constructor(private readonly opts: RelayOptions) {
    this.state = opts.state;
    this.state.onBroadcast(CHANNEL, (bodies) => {
      for (const body of bodies) this.received(JSON.parse(body) as Broadcast);
    });
  }

  /** Moves pins an older relay kept in its file into the store; watches presence across relays. */
  async start(): Promise<void> {
    if (this.state.shared) this.watchPresence();
    const file = this.opts.legacyPinsFile;
    if (!file || !existsSync(file)) return;
    const saved = JSON.parse(readFileSync(file, "utf8")) as Record<string, Pin>;
    for (const [id, pin] of Object.entries(saved)) await this.state.putRecord(PINS, id, JSON.stringify(pin), { ifAbsent: true });
    renameSync(file, `${file}.imported`);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.presenceTimer);
  }

  /**
   * A relay that dies tells nobody: its agents read offline once the store finds it gone. So
   * every few seconds the relay looks, and sends a new agent list to its browsers whose user's
   * agents came or went.
   */
  private watchPresence(): void {
    if (this.closed) return;
    this.presenceTimer = setTimeout(() => {
      void this.state
        .listRecords(AGENTS)
        .then((records) => {
          const changed = new Set(records.filter((r) => r.held !== this.online.has(r.key)).map((r) => agentIn(r).owner));
          for (const owner of changed) this.agentListChanged(owner, false);
        })
        .catch((error: unknown) => this.opts.log.warn({ err: error }, "yeaft presence unavailable"))
        .finally(() => this.watchPresence());
    }, PRESENCE_LOOK_MS);
    this.presenceTimer.unref();
  }

  // ---- agents ----

  acceptAgent(ws: WebSocket, query: URLSearchParams): void {
    const tempId = randomBytes(8).toString("hex");
    const instanceId = query.get("id") ?? tempId;
    const name = query.get("name") ?? instanceId;
    let agent: ConnectedAgent | undefined;
    const timer = setTimeout(() => ws.close(CLOSE_POLICY, "Authentication timed out"), this.opts.authTimeoutMs);
    send(ws, { type: "auth_required", tempId });
    const inOrder = this.serial(ws);
    ws.on("message", (raw) =>
      inOrder(async () => {
        const text = raw.toString();
        const msg = parse(text);
        if (!msg) return send(ws, errorEnvelope("invalid_json", "Messages are JSON objects with a type."));
        if (!agent) {
          if (msg.type !== "auth" || msg.tempId !== tempId) return ws.close(CLOSE_POLICY, "Authenticate first");
          clearTimeout(timer);
          const owner = typeof msg.secret === "string" ? await this.opts.users.byAgentSecret(msg.secret) : undefined;
          if (!owner) return ws.close(CLOSE_POLICY, "Invalid agent secret");
          agent = await this.register(ws, owner.username, instanceId, name);
          return;
        }
        await this.fromAgent(agent, ws, msg, text);
      }),
    );
    ws.on("close", () => {
      clearTimeout(timer);
      inOrder(async () => {
        if (!agent || this.connected.get(agent.id)?.ws !== ws) return; // superseded
        this.connected.delete(agent.id);
        await this.state.putRecord(AGENTS, agent.id, JSON.stringify(agent.record), { held: false, ifHeldHere: true });
        this.agentListChanged(agent.record.owner);
      });
    });
  }

  private async register(ws: WebSocket, owner: string, instanceId: string, name: string): Promise<ConnectedAgent> {
    const id = `${owner}:${instanceId}`;
    const known = await this.state.getRecord(AGENTS, id);
    const personas = known && agentIn(known).personas;
    const agent: ConnectedAgent = {
      id,
      record: { owner, name, ...(personas ? { personas } : {}) },
      ws,
      registered: false,
      live: false,
      queue: new Coalesced(() => this.sendQueued(agent)),
    };
    this.supersede(id);
    this.connected.set(id, agent);
    await this.state.putRecord(AGENTS, id, JSON.stringify(agent.record), { held: true });
    this.publish({ kind: "registered", agentId: id });
    send(ws, { type: "registered", agentId: id });
    agent.registered = true;
    await this.takeQueue(agent); // what waited while it was away, in order
    this.opts.log.info({ agentId: id }, "yeaft agent registered");
    this.agentListChanged(owner);
    return agent;
  }

  /** A newer connection of the agent took over (here or on another relay): the older is closed. */
  private supersede(agentId: string): void {
    const older = this.connected.get(agentId);
    if (!older) return;
    this.connected.delete(agentId);
    older.ws.close(CLOSE_POLICY, "Superseded by a newer connection of the same agent");
  }

  private async fromAgent(agent: ConnectedAgent, ws: WebSocket, msg: Envelope, raw: string): Promise<void> {
    if (this.connected.get(agent.id)?.ws !== ws) return; // superseded
    if (!TO_WEB.has(msg.type)) return send(ws, errorEnvelope("unknown_type", `The relay does not route "${msg.type}" from agents.`));
    const owner = agent.record.owner;
    if (msg.type === "yeaft_personas") {
      agent.record.personas = msg.personas;
      await this.state.putRecord(AGENTS, agent.id, JSON.stringify(agent.record));
      this.agentListChanged(owner);
    }
    const conversationId = conversationOf(msg);
    if (!CONVERSATION_EXEMPT.has(msg.type)) {
      const pinned = conversationId ? await this.pinOf(conversationId) : undefined;
      if (pinned?.agentId !== agent.id) {
        return send(
          ws,
          errorEnvelope("not_your_conversation", `Conversation ${conversationId ?? "(none)"} does not belong to this agent.`),
        );
      }
    }
    if (msg.type === "conversation_deleted" && conversationId) await this.unpin(conversationId);
    // The agent's own text with its id appended (a later duplicate key wins in JSON): the relay
    // does not re-serialize what it does not read.
    const text = `${raw.trimEnd().slice(0, -1)},"agentId":${JSON.stringify(agent.id)}}`;
    this.toBrowsers(owner, text);
    this.publish({ kind: "web", owner, text });
  }

  // ---- browsers ----

  acceptBrowser(ws: WebSocket, username: string): void {
    let set = this.browsers.get(username);
    if (!set) this.browsers.set(username, (set = new Set()));
    set.add(ws);
    send(ws, { type: "auth_result", success: true, username });
    const inOrder = this.serial(ws);
    // With the owner's other browsers, so that a change read meanwhile cannot be overtaken by
    // this first list read before it.
    this.agentListChanged(username, false);
    ws.on("message", (raw) =>
      inOrder(async () => {
        const text = raw.toString();
        const msg = parse(text);
        if (!msg) return send(ws, errorEnvelope("invalid_json", "Messages are JSON objects with a type."));
        await this.fromBrowser(username, ws, msg, text);
      }),
    );
    ws.on("close", () => set.delete(ws));
  }

  private async fromBrowser(username: string, ws: WebSocket, msg: Envelope, raw: string): Promise<void> {
    const type = ALIASES[msg.type] ?? msg.type;
    if (type === "get_agents") return send(ws, await this.agentList(username));
    if (type === "client_hello") return send(ws, { type: "client_hello_ack" });
    if (!TO_AGENT.has(type)) return send(ws, errorEnvelope("unknown_type", `The relay does not route "${msg.type}".`));
    let agentId: string | undefined;
    let text = raw;
    // A group chat is pinned like a conversation, by its groupId, on its first message.
    if (type === "yeaft_session_chat" && typeof msg.groupId === "string" && !(await this.pinOf(msg.groupId))) {
      const target = await this.agentOf(username, msg.agentId);
      if (!target) return send(ws, errorEnvelope("agent_not_found", "Name one of your agents (agentId) to start a group chat on."));
      await this.pin(msg.groupId, { agentId: target, owner: username });
    }
    if (type === "create_conversation") {
      agentId = await this.agentOf(username, msg.agentId);
      if (!agentId) return send(ws, errorEnvelope("agent_not_found", "Name one of your agents (agentId) to create a conversation on."));
      const conversationId = typeof msg.conversationId === "string" ? msg.conversationId : `conv_${randomBytes(8).toString("hex")}`;
      if (!(await this.pin(conversationId, { agentId, owner: username })))
        return send(ws, errorEnvelope("conversation_exists", `Conversation ${conversationId} exists.`));
      text = JSON.stringify({ ...msg, conversationId });
    } else {
      const conversationId = conversationOf(msg);
      const pinned = conversationId ? await this.pinOf(conversationId) : undefined;
      if (!pinned || pinned.owner !== username) {
        return send(
          ws,
          errorEnvelope("conversation_not_found", `No conversation ${conversationId ?? "(none)"} of yours.`, { conversationId }),
        );
      }
      agentId = pinned.agentId;
    }
    await this.toAgent(agentId, text, type, ws);
  }

  /** The agent the browser named, if it is the user's; else the user's first connected agent. */
  private async agentOf(username: string, named: unknown): Promise<string | undefined> {
    if (typeof named === "string") {
      const record = await this.state.getRecord(AGENTS, named);
      return record && agentIn(record).owner === username ? named : undefined;
    }
    const agents = await this.state.listRecords(AGENTS);
    return agents.find((a) => a.held && agentIn(a).owner === username)?.key;
  }

  /**
   * Straight to the agent when it is connected here with nothing older waiting; otherwise into
   * its queue (bounded; the oldest non-terminal messages dropped first), taken by the relay it is
   * connected to, or when it registers again.
   */
  private async toAgent(agentId: string, text: string, type: string, from: WebSocket): Promise<void> {
    const here = this.connected.get(agentId);
    if (here?.live && !here.queue.busy) return here.ws.send(text);
    const { queued, dropped } = await this.state.enqueue(queueOf(agentId), text, { keep: TERMINAL_TYPES.has(type), limits: BUFFER_LIMITS });
    if (here) return this.takeQueue(here);
    // Connected to another relay: that relay takes the queue. Read after the message is queued,
    // so an agent that registers meanwhile either reads as held here or finds the message when
    // its relay takes its queue after registering.
    if ((await this.state.getRecord(AGENTS, agentId))?.held) return this.publish({ kind: "queued", agentId });
    send(from, {
      type: "agent_status",
      agentId,
      state: "offline",
      queued,
      ...(dropped ? { dropped, message: `The agent is away: ${dropped} older message(s) dropped from its queue.` } : {}),
    });
  }

  /** Sends the agent what waits in its queue, oldest first; a take asked for during one runs after it. */
  private takeQueue(agent: ConnectedAgent): Promise<void> {
    if (!agent.registered) return Promise.resolve(); // registering takes it, after `registered`
    return agent.queue.run();
  }

  /** One take of the agent's queue; once emptied, the agent is live. */
  private async sendQueued(agent: ConnectedAgent): Promise<void> {
    // Not for a connection that is going: what waits stays for the next one.
    if (agent.ws.readyState !== agent.ws.OPEN || this.connected.get(agent.id) !== agent) return;
    for (const text of await this.state.takeQueued(queueOf(agent.id))) agent.ws.send(text);
    agent.live = true;
  }

  // ---- pins ----

  private async pinOf(conversationId: string): Promise<Pin | undefined> {
    const cached = this.pins.get(conversationId);
    if (cached) return cached;
    const record = await this.state.getRecord(PINS, conversationId);
    if (!record) return undefined;
    const pin = pinIn(record);
    this.pins.set(conversationId, pin);
    return pin;
  }

  /** Pins a new conversation to its agent; false if the id is taken. */
  private async pin(conversationId: string, pin: Pin): Promise<boolean> {
    if (!(await this.state.putRecord(PINS, conversationId, JSON.stringify(pin), { ifAbsent: true }))) return false;
    this.pins.set(conversationId, pin);
    return true;
  }

  private async unpin(conversationId: string): Promise<void> {
    await this.state.putRecord(PINS, conversationId, undefined);
    this.pins.delete(conversationId);
    this.publish({ kind: "unpinned", conversationId });
  }

  // ---- to browsers, and between relays ----

  private toBrowsers(owner: string, msg: Record<string, unknown> | string): void {
    // Encoded once for all of the owner's browsers, sent as text frames.
    const bytes = Buffer.from(typeof msg === "string" ? msg : JSON.stringify(msg));
    for (const ws of this.browsers.get(owner) ?? []) ws.send(bytes, { binary: false });
  }

  private async agentList(owner: string): Promise<Envelope> {
    const [records, pins] = await Promise.all([this.state.listRecords(AGENTS), this.state.listRecords(PINS)]);
    const pinned = pins.map((p) => ({ id: p.key, agentId: pinIn(p).agentId }));
    const agents = records.flatMap((r) => {
      const agent = agentIn(r);
      if (agent.owner !== owner) return [];
      if (r.held) this.online.add(r.key);
      else this.online.delete(r.key);
      return [
        {
          id: r.key,
          name: agent.name,
          online: r.held,
          ...(agent.personas ? { personas: agent.personas } : {}),
          conversations: pinned.filter((p) => p.agentId === r.key).map((p) => p.id),
        },
      ];
    });
    return { type: "agent_list", agents };
  }

  private agentListChanged(owner: string, tellOthers = true): void {
    if (this.browsers.get(owner)?.size) {
      let listing = this.listings.get(owner);
      if (!listing) this.listings.set(owner, (listing = new Coalesced(async () => this.toBrowsers(owner, await this.agentList(owner)))));
      listing.run().catch((error: unknown) => this.opts.log.warn({ err: error }, "yeaft agent list unavailable"));
    }
    if (tellOthers) this.publish({ kind: "agentsChanged", owner });
  }

  /** Tells the other relays, batched: one broadcast per turn of the event loop, in order. */
  private publish(msg: Broadcast): void {
    if (!this.state.shared) return;
    if (this.outbox.push(JSON.stringify(msg)) > 1) return;
    setImmediate(() => {
      const batch = this.outbox.splice(0);
      this.sending = this.sending
        .then(() => this.state.broadcast(CHANNEL, batch))
        .catch((error: unknown) => this.opts.log.warn({ err: error, lost: batch.length }, "yeaft relay broadcast failed"));
    });
  }

  private received(msg: Broadcast): void {
    switch (msg.kind) {
      case "web":
        return this.toBrowsers(msg.owner, msg.text);
      case "agentsChanged":
        return this.agentListChanged(msg.owner, false);
      case "queued": {
        const here = this.connected.get(msg.agentId);
        if (here) void this.takeQueue(here).catch((error: unknown) => this.opts.log.warn({ err: error }, "yeaft queue take failed"));
        return;
      }
      case "registered":
        return this.supersede(msg.agentId);
      case "unpinned":
        this.pins.delete(msg.conversationId);
    }
  }

  /**
   * Runs a connection's handlers one after another, in arrival order (they await the store). A
   * failure is told to that peer in-band; the connection stays.
   */
  private serial(ws: WebSocket): (work: () => Promise<void>) => void {
    let tail = Promise.resolve();
    return (work) => {
      tail = tail.then(work).catch((error: unknown) => {
        this.opts.log.warn({ err: error }, "yeaft relay could not route a message");
        send(
          ws,
          errorEnvelope("relay_unavailable", `The relay cannot route this now: ${error instanceof Error ? error.message : String(error)}`),
        );
      });
    };
  }
}

function conversationOf(msg: Envelope): string | undefined {
  return typeof msg.conversationId === "string" ? msg.conversationId : typeof msg.groupId === "string" ? msg.groupId : undefined;
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
