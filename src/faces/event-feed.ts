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

/** Events read from the log per thread per step of a catch-up (or of a replay). */
const CATCH_UP_PAGE = 256;
/** At most this many events are read per step of a catch-up, over all its threads: memory stays bounded. */
const CATCH_UP_STEP = 4_096;
/** The fewest read per thread in a step: with many threads behind, a step takes fewer of them. */
const CATCH_UP_MIN_PAGE = 16;

/** A notification being made: ready, or a read away (undefined when the read failed). */
type Making<Made> = { made: Made } | Promise<{ made: Made } | undefined>;

/** The `write` of a face that makes a list of notifications of an event: sends each; false for none. */
export function notifyEach<N>(notify: (notification: N) => void): (notifications: N[]) => boolean {
  return (notifications) => {
    for (const notification of notifications) notify(notification);
    return notifications.length > 0;
  };
}

/** `Made`: what a face makes of an event for its connection (its notifications). */
export class EventFeed<Made> {
  /** The last seq handed to the connection, per thread: live delivery never repeats it. */
  private readonly sentSeq = new Map<string, number>();
  /**
   * Threads whose events come from the log for now, each with the highest seq it is known to
   * have: a thread leaves once that much has been sent, so an event that arrived live while
   * a page was being read is not missed.
   */
  private readonly behind = new Map<string, number>();
  /** Threads a replay is reading back: it, not the catch-up, sends what they missed. */
  private readonly replaying = new Set<string>();
  private catchingUp = false;
  /**
   * Per thread, what to write, in order, once the notification being made (it reads the store)
   * is out. The notifications behind it are made at once: their reads run meanwhile, not one
   * after another. Other threads' events do not wait: a client is owed each thread's events in
   * order, and one turn's end (its read, slow on a busy database) held up every other thread's
   * stream on the connection (the cluster bench: reads of up to 400 ms as 200 turns ended).
   */
  private readonly waiting = new Map<string, Array<Making<Made>>>();
  /** Per thread, settles once its `waiting` has been sent. */
  private readonly sending = new Map<string, Promise<void>>();

  constructor(
    private readonly runtime: Pick<RuntimeApi, "eventsAfter" | "eventsAfterEach">,
    private readonly connection: FeedConnection,
    /** Whether the connection wants this event at all (subscriptions, broadcasts). */
    private readonly wants: (event: RuntimeEvent) => boolean,
    /** Makes what an event is for this connection; a Promise when that needs a read first. */
    private readonly make: (event: RuntimeEvent) => Made | Promise<Made>,
    /** Writes it; false when it was nothing for this connection. */
    private readonly write: (made: Made) => boolean,
    private readonly log: Logger,
  ) {}

  /** A committed event, as the runtime delivers it. */
  live(event: RuntimeEvent): void {
    if (this.connection.closed || !this.wants(event)) return;
    // Already sent by a replay, or to be read from the log with the rest of its thread.
    if (event.seq <= (this.sentSeq.get(event.threadId) ?? 0)) return;
    if (this.behind.has(event.threadId) || this.connection.overBudget()) {
      this.fallBehind(event.threadId, event.seq);
      return;
    }
    this.deliver(event);
  }

  /**
   * Sends the thread's events after `afterSeq` from the log (a client catching up), as far as
   * the budget allows now; the rest follows once the connection drains. Live events of the
   * thread wait for the log meanwhile. Resolves with how many were sent now.
   */
  async replay(threadId: string, afterSeq: number): Promise<number> {
    // Everything after `afterSeq` is sent, also what this connection was sent before: the
    // client asked for it again.
    this.sentSeq.set(threadId, afterSeq);
    this.behind.set(threadId, Math.max(this.behind.get(threadId) ?? 0, afterSeq));
    let sent = 0;
    this.replaying.add(threadId);
    try {
      while (this.behind.has(threadId) && !this.connection.closed && !this.connection.overBudget()) sent += await this.readPage(threadId);
    } finally {
      this.replaying.delete(threadId);
    }
    if (this.behind.has(threadId)) this.startCatchUp();
    // What the replay sent is out before the caller answers, also what needed a read to make.
    while (this.sending.has(threadId)) await this.sending.get(threadId);
    return sent;
  }

  /** Forgets a thread (deleted, unsubscribed): nothing more is read back for it. */
  forget(threadId: string): void {
    this.behind.delete(threadId);
  }

  private deliver(event: RuntimeEvent): boolean {
    this.sentSeq.set(event.threadId, Math.max(event.seq, this.sentSeq.get(event.threadId) ?? 0));
    const made = this.make(event);
    const queue = this.waiting.get(event.threadId);
    if (!(made instanceof Promise)) {
      if (!queue) return this.write(made);
      queue.push({ made });
      return true;
    }
    const making = made.then(
      (ready) => ({ made: ready }),
      (error: unknown) => void this.log.error({ err: error }, "could not make a notification"),
    );
    if (queue) {
      queue.push(making);
      return true;
    }
    const { threadId } = event;
    const waiting = [making];
    this.waiting.set(threadId, waiting);
    const sending = this.sendWaiting(threadId, waiting);
    this.sending.set(threadId, sending);
    void sending.then(() => {
      if (this.sending.get(threadId) === sending) this.sending.delete(threadId);
    });
    return true;
  }

  /** Writes what waited behind a notification of the thread that needed a read, in order. */
  private async sendWaiting(threadId: string, waiting: Array<Making<Made>>): Promise<void> {
    // An index, not shift(): shifting a long queue copies it each time.
    for (let next = 0; next < waiting.length; next++) {
      const making = waiting[next]!;
      waiting[next] = undefined as never; // written: not kept alive by the queue
      const ready = making instanceof Promise ? await making : making;
      if (ready && !this.connection.closed) this.write(ready.made);
    }
    this.waiting.delete(threadId);
  }

  private fallBehind(threadId: string, seq: number): void {
    if (!this.sentSeq.has(threadId)) this.sentSeq.set(threadId, seq - 1);
    this.behind.set(threadId, Math.max(this.behind.get(threadId) ?? 0, seq));
    if (!this.replaying.has(threadId)) this.startCatchUp();
  }

  /** Sends the thread's next page from the log; returns how many events went out. */
  private async readPage(threadId: string): Promise<number> {
    return this.sendPage(threadId, await this.runtime.eventsAfter(threadId, this.sentSeq.get(threadId) ?? 0, CATCH_UP_PAGE), CATCH_UP_PAGE);
  }

  /** Sends a page of the thread read from the log (at most `limit` were asked for); returns how many events went out. */
  private sendPage(threadId: string, events: RuntimeEvent[], limit: number): number {
    let sent = 0;
    for (const event of events) {
      if (event.seq <= (this.sentSeq.get(threadId) ?? 0)) continue; // a replay and a catch-up read the same page
      if (this.wants(event)) sent += this.deliver(event) ? 1 : 0;
      else this.sentSeq.set(threadId, event.seq);
    }
    // Caught up with the log: what is committed later arrives live.
    const known = this.behind.get(threadId);
    if (events.length < limit && known !== undefined && (this.sentSeq.get(threadId) ?? 0) >= known) this.behind.delete(threadId);
    return sent;
  }

  private startCatchUp(): void {
    if (!this.catchingUp) void this.catchUp();
  }

  private async catchUp(): Promise<void> {
    this.catchingUp = true;
    this.log.debug(
      { pendingBytes: this.connection.pendingBytes(), threads: this.behind.size },
      "client fell behind; catching it up from the event log",
    );
    try {
      const waiting = (): string[] => [...this.behind.keys()].filter((threadId) => !this.replaying.has(threadId));
      while (waiting().length > 0 && !this.connection.closed) {
        await this.connection.whenDrained();
        // Every thread behind in one read (a step at a time when that is many).
        const all = waiting();
        const limit = Math.max(CATCH_UP_MIN_PAGE, Math.min(CATCH_UP_PAGE, Math.floor(CATCH_UP_STEP / all.length)));
        const threads = all.slice(0, Math.floor(CATCH_UP_STEP / limit));
        const cursors = threads.map((threadId) => ({ threadId, afterSeq: this.sentSeq.get(threadId) ?? 0 }));
        let pages: Map<string, RuntimeEvent[]>;
        try {
          pages = await this.runtime.eventsAfterEach(cursors, limit);
        } catch (error) {
          this.log.warn({ err: error, threads: threads.length }, "could not read the log to catch a client up");
          for (const threadId of threads) this.behind.delete(threadId);
          continue;
        }
        for (const { threadId, afterSeq } of cursors) {
          // Forgotten, or replayed (from another seq), while the read ran: not this page's to send.
          if (this.connection.overBudget() || !this.behind.has(threadId) || this.replaying.has(threadId)) continue;
          if ((this.sentSeq.get(threadId) ?? 0) !== afterSeq) continue;
          this.sendPage(threadId, pages.get(threadId)!, limit);
        }
        // Threads still behind go to the back: the next step starts with those not read yet.
        for (const threadId of threads) {
          const known = this.behind.get(threadId);
          if (known === undefined) continue;
          this.behind.delete(threadId);
          this.behind.set(threadId, known);
        }
      }
      this.log.debug("client caught up; live again");
    } finally {
      this.catchingUp = false;
    }
  }
}
