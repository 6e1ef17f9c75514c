// One connection's feed of runtime events, with the event log as its buffer. While the peer
// keeps up, events go out live. Once its unsent output passes the connection's budget, live
// events for it stop being queued (memory stays bounded however long it stalls); when it has
// drained, what it missed is read back from the log, per thread from its own cursor, in order,
// and then it is live again. The peer sees the same events in the same order, later.
import type { RuntimeEvent } from "../domain/events.js";
import type { Logger } from "../log.js";
import type { RuntimeApi } from "../runtime/api.js";

/** What the feed needs of a connection. */
export interface FeedConnection {
  readonly closed: boolean;
  overBudget(): boolean;
  pendingBytes(): number;
  whenDrained(): Promise<void>;
}

/** Events read from the log per step of a catch-up. */
const CATCH_UP_PAGE = 256;

export class EventFeed {
  /** The last seq handed to the connection, per thread: live delivery never repeats it. */
  private readonly sentSeq = new Map<string, number>();
  /** Threads with events the connection has not been sent yet, to be read from the log. */
  private readonly behind = new Set<string>();
  private catchingUp = false;

  constructor(
    private readonly runtime: Pick<RuntimeApi, "eventsAfter">,
    private readonly connection: FeedConnection,
    /** Whether the connection wants this event at all (subscriptions, broadcasts). */
    private readonly wants: (event: RuntimeEvent) => boolean,
    /** Sends one event; false when it maps to nothing for this connection. */
    private readonly send: (event: RuntimeEvent) => boolean,
    private readonly log: Logger,
  ) {}

  /** A committed event, as the runtime delivers it. */
  live(event: RuntimeEvent): void {
    if (this.connection.closed || !this.wants(event)) return;
    // Already sent by a replay, or to be read from the log with the rest of its thread.
    if (event.seq <= (this.sentSeq.get(event.threadId) ?? 0)) return;
    if (this.behind.has(event.threadId) || this.connection.overBudget()) {
      this.fallBehind(event.threadId, event.seq - 1);
      return;
    }
    this.deliver(event);
  }

  /**
   * Sends the thread's events after `afterSeq` from the log (a client catching up), as far as
   * the budget allows now; the rest follows once the connection drains. Returns how many were
   * sent now.
   */
  replay(threadId: string, afterSeq: number): number {
    // Everything after `afterSeq` is sent, also what this connection was sent before: the
    // client asked for it again.
    let cursor = afterSeq;
    let sent = 0;
    for (;;) {
      const events = this.runtime.eventsAfter(threadId, cursor, CATCH_UP_PAGE);
      for (const event of events) {
        cursor = event.seq;
        sent += this.deliver(event) ? 1 : 0;
      }
      if (events.length < CATCH_UP_PAGE) return sent;
      if (this.connection.overBudget()) {
        // The rest comes from the log as the connection drains, from where the replay stopped.
        this.sentSeq.set(threadId, cursor);
        this.fallBehind(threadId, cursor);
        return sent;
      }
    }
  }

  /** Forgets a thread (deleted, unsubscribed): nothing more is read back for it. */
  forget(threadId: string): void {
    this.behind.delete(threadId);
  }

  private deliver(event: RuntimeEvent): boolean {
    this.sentSeq.set(event.threadId, Math.max(event.seq, this.sentSeq.get(event.threadId) ?? 0));
    return this.send(event);
  }

  private fallBehind(threadId: string, cursor: number): void {
    if (!this.sentSeq.has(threadId)) this.sentSeq.set(threadId, cursor);
    this.behind.add(threadId);
    if (!this.catchingUp) void this.catchUp();
  }

  private async catchUp(): Promise<void> {
    this.catchingUp = true;
    this.log.debug(
      { pendingBytes: this.connection.pendingBytes(), threads: this.behind.size },
      "client fell behind; catching it up from the event log",
    );
    try {
      while (this.behind.size > 0 && !this.connection.closed) {
        await this.connection.whenDrained();
        for (const threadId of [...this.behind]) {
          if (this.connection.overBudget()) break;
          const events = this.runtime.eventsAfter(threadId, this.sentSeq.get(threadId) ?? 0, CATCH_UP_PAGE);
          for (const event of events) {
            if (this.wants(event)) this.deliver(event);
            else this.sentSeq.set(threadId, event.seq);
          }
          // Caught up with the log: what is committed later arrives live.
          if (events.length < CATCH_UP_PAGE) this.behind.delete(threadId);
        }
      }
      this.log.debug("client caught up; live again");
    } finally {
      this.catchingUp = false;
    }
  }
}
