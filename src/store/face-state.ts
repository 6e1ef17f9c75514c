// State a face shares across the processes of one store, beside the threads: named records, a
// bounded queue per name, and broadcasts. The Yeaft relay keeps its presence, routes and away
// buffers here, so that several relay processes on one PostgreSQL serve as one. Not projections
// of the event log: `rebuild()` leaves them be.

/** A record and whether a live process holds it (see `putRecord`'s `held`). */
export interface FaceRecord {
  key: string;
  value: string;
  held: boolean;
}

/** How much a queue keeps: past either bound, its oldest droppable messages go first. */
export interface QueueLimits {
  messages: number;
  bytes: number;
}

export interface PutRecordOptions {
  /** Only when no record has the key: resolves false if one had. */
  ifAbsent?: boolean;
  /** This process holds the record (it reads `held` while the process lives), or lets it go. */
  held?: boolean;
  /** Only when this process holds the record: resolves false if another does, or none. */
  ifHeldHere?: boolean;
}

export interface FaceState {
  /** Whether other processes share this state (a cluster): broadcasts reach someone. */
  readonly shared: boolean;
  /** Sets (or, with `undefined`, deletes) a record; false when an `if…` condition did not hold. */
  putRecord(ns: string, key: string, value: string | undefined, opts?: PutRecordOptions): Promise<boolean>;
  getRecord(ns: string, key: string): Promise<FaceRecord | undefined>;
  listRecords(ns: string): Promise<FaceRecord[]>;
  /**
   * Adds a message at the end of a queue, then trims it to `limits` (oldest first, `keep`
   * messages only when nothing else is left to drop). Messages one queue gets from all processes
   * are taken in the order they were added.
   */
  enqueue(queue: string, body: string, opts: { keep: boolean; limits: QueueLimits }): Promise<{ queued: number; dropped: number }>;
  /** Takes every message of a queue, oldest first. */
  takeQueued(queue: string): Promise<string[]>;
  /** Sends messages to the other processes' `onBroadcast` listeners, in commit order. One process: nobody. */
  broadcast(channel: string, bodies: string[]): Promise<void>;
  onBroadcast(channel: string, listener: (bodies: string[]) => void): void;
}

/** A queue's size: its messages and their bytes. */
export interface QueueSize {
  count: number;
  bytes: number;
}

export function fits(size: QueueSize, limits: QueueLimits): boolean {
  return size.count <= limits.messages && size.bytes <= limits.bytes;
}

/**
 * The ids of the messages to drop so that a queue fits its limits, taken from `dropOrder` (the
 * queue's droppable messages oldest first, then its kept ones) only as far as needed; `size`
 * shrinks with each. A full queue that takes one more message reads one row of it, not all of
 * them (which cost 4–7 ms a message once an away agent's queue was full).
 */
export function* dropsToFit(size: QueueSize, limits: QueueLimits, dropOrder: Iterable<{ id: number; bytes: number }>): Generator<number> {
  for (const message of dropOrder) {
    if (fits(size, limits)) return;
    yield message.id;
    size.count--;
    size.bytes -= message.bytes;
  }
}
