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

/** The ids of the messages to drop so that a queue (oldest first) fits its limits. */
export function overflow(queue: Array<{ id: number; keep: boolean; bytes: number }>, limits: QueueLimits): number[] {
  let count = queue.length;
  let bytes = queue.reduce((sum, m) => sum + m.bytes, 0);
  const drops: number[] = [];
  const dropWhile = (candidates: typeof queue): void => {
    for (const m of candidates) {
      if (count <= limits.messages && bytes <= limits.bytes) return;
      drops.push(m.id);
      count--;
      bytes -= m.bytes;
    }
  };
  dropWhile(queue.filter((m) => !m.keep));
  dropWhile(queue.filter((m) => m.keep));
  return drops;
}
