// The event feed under reads that take time: a notification that needs one holds the events of
// its thread after it (whose own reads run meanwhile), not other threads', a replay answers only
// once what it sent is out, and
// an event committed while a replay reads the log is sent once, in its place. A client that
// fell behind is caught up on all its threads with one read of the log per step.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/domain/events.js";
import { EventFeed, type FeedConnection } from "../../src/faces/event-feed.js";
import type { EventCursor } from "../../src/store/store.js";
import { silentLogger } from "../../src/log.js";

const connection: FeedConnection = {
  closed: false,
  overBudget: () => false,
  pendingBytes: () => 0,
  whenDrained: async () => {},
};

function renamed(seq: number, threadId = "t"): RuntimeEvent {
  return { type: "thread.renamed", threadId, seq, ts: "2026-01-01T00:00:00.000Z", data: { displayName: `n${seq}` } };
}

/** A log the feed reads through `eventsAfter`; each read can be held until the test lets it go. */
class SlowLog {
  readonly events: RuntimeEvent[] = [];
  private held: Array<() => void> | undefined;

  hold(): void {
    this.held = [];
  }
  release(): void {
    const waiting = this.held ?? [];
    this.held = undefined;
    for (const go of waiting) go();
  }
  /** The reads made, each as the threads it asked for. */
  readonly reads: string[][] = [];

  async eventsAfter(threadId: string, afterSeq: number, limit = 10_000): Promise<RuntimeEvent[]> {
    this.reads.push([threadId]);
    if (this.held) await new Promise<void>((resolve) => this.held!.push(resolve));
    return this.page(threadId, afterSeq, limit);
  }
  async eventsAfterEach(cursors: readonly EventCursor[], limitEach: number): Promise<Map<string, RuntimeEvent[]>> {
    this.reads.push(cursors.map((c) => c.threadId));
    // The log as it was when the read was made: what is committed while it is held is not in it.
    const pages = new Map(cursors.map((c) => [c.threadId, this.page(c.threadId, c.afterSeq, limitEach)]));
    if (this.held) await new Promise<void>((resolve) => this.held!.push(resolve));
    return pages;
  }
  private page(threadId: string, afterSeq: number, limit: number): RuntimeEvent[] {
    return this.events.filter((e) => e.threadId === threadId && e.seq > afterSeq).slice(0, limit);
  }
}

/** A connection whose client stops reading until `drain()`: over its budget meanwhile. */
class StalledConnection implements FeedConnection {
  closed = false;
  private stalled = true;
  private drained: Array<() => void> = [];
  overBudget(): boolean {
    return this.stalled;
  }
  pendingBytes(): number {
    return this.stalled ? 1 << 20 : 0;
  }
  whenDrained(): Promise<void> {
    return this.stalled ? new Promise((resolve) => this.drained.push(resolve)) : Promise.resolve();
  }
  drain(): void {
    this.stalled = false;
    for (const resolve of this.drained.splice(0)) resolve();
  }
}

/** A feed that wants every event, makes it with `make` and records what it writes in `sent`. */
function feedOf<Made>(
  make: (event: RuntimeEvent) => Made | Promise<Made>,
  sent: Made[],
  log = new SlowLog(),
  to: FeedConnection = connection,
): EventFeed<Made> {
  return new EventFeed(
    log,
    to,
    () => true,
    make,
    (made) => (sent.push(made), true),
    silentLogger,
  );
}

describe("event feed", () => {
  it("holds its thread's events after a notification that needs a read, and sends them in order", async () => {
    const sent: number[] = [];
    let finishRead!: () => void;
    const read = new Promise<void>((resolve) => (finishRead = resolve));
    const feed = feedOf((event) => (event.seq === 1 ? read.then(() => 1) : event.seq), sent);
    feed.live(renamed(1));
    feed.live(renamed(2));
    feed.live(renamed(3));
    assert.deepEqual(sent, [], "nothing overtakes the event being made");
    finishRead();
    await read;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, [1, 2, 3]);
  });

  it("makes the notifications behind one being read at once: their reads overlap, they are written in order", async () => {
    const sent: number[] = [];
    const reads = new Map<number, () => void>();
    const feed = feedOf((event) => new Promise<number>((resolve) => reads.set(event.seq, () => resolve(event.seq))), sent);
    for (const seq of [1, 2, 3]) feed.live(renamed(seq));
    assert.deepEqual([...reads.keys()], [1, 2, 3], "all three reads are out before the first is done");
    reads.get(3)!();
    reads.get(2)!();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, [], "nothing overtakes the first");
    reads.get(1)!();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, [1, 2, 3]);
  });

  it("holds only its own thread's events: other threads' go out meanwhile", async () => {
    const sent: string[] = [];
    let finishRead!: () => void;
    const read = new Promise<void>((resolve) => (finishRead = resolve));
    const feed = feedOf((event) => {
      const name = `${event.threadId}${event.seq}`;
      return name === "a1" ? read.then(() => name) : name;
    }, sent);
    feed.live(renamed(1, "a"));
    feed.live(renamed(1, "b"));
    feed.live(renamed(2, "a"));
    feed.live(renamed(2, "b"));
    assert.deepEqual(sent, ["b1", "b2"], "thread b is not held by thread a's read");
    finishRead();
    await read;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, ["b1", "b2", "a1", "a2"]);
    feed.live(renamed(3, "a"));
    assert.deepEqual(sent.at(-1), "a3", "thread a goes out at once again once its read is done");
  });

  it("replays from the log; an event committed during the read goes out once, after the replay's", async () => {
    const log = new SlowLog();
    log.events.push(renamed(1), renamed(2));
    const sent: number[] = [];
    const feed = feedOf((event) => event.seq, sent, log);
    log.hold();
    const replay = feed.replay("t", 0);
    // Committed and delivered live while the replay's read is still out.
    log.events.push(renamed(3));
    feed.live(renamed(3));
    assert.deepEqual(sent, []);
    log.release();
    assert.equal(await replay, 3);
    assert.deepEqual(sent, [1, 2, 3]);
    feed.live(renamed(4));
    assert.deepEqual(sent, [1, 2, 3, 4], "live again once caught up");
  });

  it("a replay answers only once what it sent is out, also events whose notification needed a read", async () => {
    const log = new SlowLog();
    log.events.push(renamed(1), renamed(2));
    const sent: number[] = [];
    const feed = feedOf((event) => (event.seq === 1 ? Promise.resolve(1) : event.seq), sent, log);
    await feed.replay("t", 0);
    assert.deepEqual(sent, [1, 2]);
  });

  it("catches a client that fell behind up on all its threads with one read, each thread in order, then live again", async () => {
    const log = new SlowLog();
    const client = new StalledConnection();
    const sent: string[] = [];
    const feed = feedOf((event) => `${event.threadId}#${event.seq}`, sent, log, client);
    const threads = Array.from({ length: 50 }, (_, i) => `t${i}`);
    // Committed while the client does not read: none of it is queued for it.
    for (const seq of [1, 2, 3])
      for (const threadId of threads) {
        log.events.push(renamed(seq, threadId));
        feed.live(renamed(seq, threadId));
      }
    assert.equal(sent.length, 0, "nothing is queued for a client over its budget");
    log.hold();
    client.drain();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log.reads, [threads], "one read for the 50 threads");
    // Committed while that read is out: sent once, after what the read brings.
    log.events.push(renamed(4, "t0"));
    feed.live(renamed(4, "t0"));
    log.release();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    for (const threadId of threads) {
      const expected = [1, 2, 3, ...(threadId === "t0" ? [4] : [])].map((seq) => `${threadId}#${seq}`);
      assert.deepEqual(
        sent.filter((s) => s.startsWith(`${threadId}#`)),
        expected,
      );
    }
    assert.equal(sent.length, 151);
    assert.equal(log.reads.length, 2, "a second read for t0, whose event came during the first");
    feed.live(renamed(5, "t1"));
    assert.equal(sent.at(-1), "t1#5", "live again once caught up");
  });

  it("a catch-up does not send a page of a thread a replay took meanwhile: no event is skipped or sent twice", async () => {
    const log = new SlowLog();
    const client = new StalledConnection();
    const sent: string[] = [];
    const feed = feedOf((event) => `${event.threadId}${event.seq}`, sent, log, client);
    for (const seq of [1, 2, 3, 4]) log.events.push(renamed(seq, "a"), renamed(seq, "b"));
    for (const seq of [3, 4]) for (const threadId of ["a", "b"]) feed.live(renamed(seq, threadId));
    log.hold();
    client.drain();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log.reads, [["a", "b"]]);
    // The client asks for thread a again from seq 0 while the catch-up's read (from seq 2) is out.
    const replay = feed.replay("a", 0);
    log.release();
    await replay;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      sent.filter((s) => s.startsWith("a")),
      ["a1", "a2", "a3", "a4"],
    );
    assert.deepEqual(
      sent.filter((s) => s.startsWith("b")),
      ["b3", "b4"],
    );
  });
});
