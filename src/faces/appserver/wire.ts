// AppServer protocol: how runtime objects and events look on the wire.
import type { StorageStatus } from "../../store/store.js";
import type { RuntimeEvent } from "../../domain/events.js";
import type { Item, ItemType, Thread, ThreadRuntimeState, TokenUsage } from "../../domain/model.js";
import type { z } from "zod";
import type { AppServerNotifications, WireThread, WireTurn } from "./protocol.js";
import type { ClientCapabilities } from "./protocol.js";

// The wire objects are the protocol table's (z.output of its schemas), never restated here.
export type { WireItem, WireThread, WireTurn } from "./protocol.js";

export interface Notification {
  method: string;
  params: Record<string, unknown>;
}

/** Item types a connection receives only when it declared the capability at initialize. */
const OPT_IN_ITEMS: Partial<Record<ItemType, keyof ClientCapabilities>> = {
  commandExecution: "commandExecutionStreaming",
  toolExecution: "toolExecutionLifecycle",
};

/** Which items and deltas a connection receives, from what it declared at initialize. */
export class ItemFilter {
  constructor(private readonly caps: ClientCapabilities) {}

  wantsItem(item: Pick<Item, "type">): boolean {
    const capability = OPT_IN_ITEMS[item.type];
    return capability === undefined || this.caps[capability] === true;
  }

  /** The item types wantsItem refuses, for reads that leave them out in the store. */
  get unwantedItemTypes(): ItemType[] {
    return (Object.keys(OPT_IN_ITEMS) as ItemType[]).filter((type) => !this.wantsItem({ type }));
  }

  get wantsDeltas(): boolean {
    return this.caps.streamingSupport !== false;
  }
}

export function wireThread(thread: Thread, runtime: ThreadRuntimeState, tokenUsage?: TokenUsage): WireThread {
  const { plan: _plan, ...rest } = thread;
  return { ...rest, runtime, ...(tokenUsage ? { tokenUsage } : {}) };
}

/** Context a mapping needs beyond the event itself (current objects read from the runtime). */
export interface EventContext {
  thread(threadId: string): Promise<WireThread | undefined>;
  turn(turnId: string): Promise<WireTurn | undefined>;
}

/**
 * Maps one runtime event to the notification a connection should get, or undefined when
 * this face does not surface it (or the connection's capabilities filter it out). Every
 * thread-scoped notification carries `seq`, the event's position in the log, so a client can
 * resubscribe with `afterSeq` and miss nothing.
 */
export function toNotification(
  event: RuntimeEvent,
  filter: ItemFilter,
  ctx: EventContext,
): Notification | undefined | Promise<Notification | undefined> {
  const base = { threadId: event.threadId, seq: event.seq };
  switch (event.type) {
    case "thread.created":
      return withThread(ctx, event.threadId, (thread) => note("thread/started", { ...base, thread }));
    case "thread.resumed":
      return withThread(ctx, event.threadId, (thread) => note("thread/resumed", { ...base, thread }));
    case "thread.renamed":
      return note("thread/renamed", { ...base, displayName: event.data.displayName });
    case "thread.deleted":
      return note("thread/deleted", base);
    case "thread.runtimeChanged":
      return note("thread/runtimeChanged", { ...base, runtime: event.data.runtime });
    case "thread.queueUpdated":
      return note("thread/queue/updated", { ...base, queuedInputs: event.data.queuedInputs });
    case "turn.started":
      return note("turn/started", { ...base, turn: event.data.turn });
    case "turn.completed":
      return withTurn(ctx, event.data.turnId, (turn) => note("turn/completed", { ...base, turn }));
    case "turn.failed":
      return withTurn(ctx, event.data.turnId, (turn) => note("turn/failed", { ...base, turn, error: event.data.error }));
    case "turn.cancelled":
      return withTurn(ctx, event.data.turnId, (turn) => note("turn/cancelled", { ...base, turn, reason: event.data.reason }));
    case "turn.diffUpdated":
      return note("turn/diff/updated", { ...base, turnId: event.data.turnId, diff: event.data.diff });
    case "turn.planUpdated":
      return note("plan/updated", { ...base, turnId: event.data.turnId, plan: event.data.plan });
    case "item.started":
    case "item.completed": {
      const { item } = event.data;
      if (!filter.wantsItem(item)) return undefined;
      return note(event.type === "item.started" ? "item/started" : "item/completed", { ...base, turnId: item.turnId, item });
    }
    case "item.delta": {
      const { kind, turnId, itemId, delta, stream } = event.data;
      if (!filter.wantsDeltas) return undefined;
      // The hottest path of the server (one per streamed token): an object literal, no spread.
      const params: DeltaParams = { threadId: event.threadId, seq: event.seq, turnId, itemId, delta };
      if (kind === "agentMessage") return note("item/agentMessage/delta", params);
      if (kind === "reasoning") return note("item/reasoning/delta", params);
      if (kind === "toolArguments") return note("item/toolCall/argumentsDelta", params);
      if (!filter.wantsItem({ type: "commandExecution" })) return undefined;
      if (stream) params.stream = stream;
      return note("item/commandExecution/outputDelta", params);
    }
    case "approval.resolved":
      return note("item/approval/resolved", { ...base, ...event.data });
    case "usage.updated":
      // `usage` is this model call's, `total` the turn's so far. Logs written before deltas were
      // recorded have no per-call figure, and are not replayed as usage notifications.
      if (!event.data.delta) return undefined;
      return note("item/usage/delta", { ...base, turnId: event.data.turnId, usage: event.data.delta, total: event.data.usage });
    case "thread.statusChanged":
      return note("thread/statusChanged", { ...base, status: event.data.status });
    case "thread.configured":
      return note("thread/configUpdated", { ...base, configuration: event.data.configuration });
    case "thread.modeChanged":
      return note("thread/modeChanged", { ...base, mode: event.data.mode });
    case "approval.ruleAdded":
      return undefined;
  }
}

type Notifications = typeof AppServerNotifications;
type DeltaParams = z.input<Notifications["item/commandExecution/outputDelta"]>;

// A thread or turn deleted between the event and its delivery has nothing left to show; its
// thread/deleted notification follows.
async function withThread(
  ctx: EventContext,
  threadId: string,
  make: (thread: WireThread) => Notification,
): Promise<Notification | undefined> {
  const thread = await ctx.thread(threadId);
  return thread && make(thread);
}

async function withTurn(ctx: EventContext, turnId: string, make: (turn: WireTurn) => Notification): Promise<Notification | undefined> {
  const turn = await ctx.turn(turnId);
  return turn && make(turn);
}

/** A notification whose params the compiler checks against the protocol table. */
function note<M extends keyof Notifications>(method: M, params: z.input<Notifications[M]>): Notification {
  return { method, params };
}

/** The storage status as server/statusChanged. */
export function storageNotification(status: StorageStatus): Notification {
  return note(
    "server/statusChanged",
    status.available
      ? { status: "ok" }
      : { status: "storageUnavailable", cause: status.cause, message: status.message, since: status.since },
  );
}
