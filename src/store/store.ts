// The store: an append-only event log plus tables derived from it (threads, turns, items,
// approval rules). Derived tables can always be rebuilt by replaying the log.
import type { EventType, NewEvent, RuntimeEvent } from "../domain/events.js";
import type {
  AgentMode,
  ApprovalDecision,
  InputPart,
  Item,
  ItemType,
  Thread,
  ThreadConfiguration,
  ThreadStatus,
  TokenUsage,
  Turn,
} from "../domain/model.js";
import type { ThinkingMode } from "../providers/provider.js";
import type { FaceState } from "./face-state.js";

export interface ThreadFilter {
  userId?: string;
  originChannel?: string;
  workspacePath?: string;
  channelContext?: string;
  status?: ThreadStatus;
  /** Leaves archived threads out (faces hide them unless a client asks for them). */
  hideArchived?: boolean;
}

/** Where a reader of a thread's events is: it has every event up to `afterSeq`. */
export interface EventCursor {
  threadId: string;
  afterSeq: number;
}

export interface ThreadPage {
  threads: Thread[];
  /** Opaque cursor for the next page, absent on the last page. */
  nextCursor?: string;
}

/** A turn's items as stored: one JSON array text, in creation order. */
export interface TurnItemsJson {
  turnId: string;
  json: string;
}

export type StorageStatus =
  | { available: true }
  | {
      available: false;
      /** SQLite's or the system's error code, e.g. SQLITE_FULL or ENOSPC. */
      cause: string;
      message: string;
      since: string;
    };

/** What a client asks of a running turn, handed to the process that runs it. */
export type ThreadCommand =
  | { kind: "steer"; input: InputPart[]; expectedTurnId?: string }
  | { kind: "interrupt"; turnId?: string }
  /** Input queued behind the running turn (turn/enqueue), or taken off that queue. */
  | { kind: "enqueue"; input: InputPart[] }
  | { kind: "removeQueued"; queuedInputId: string }
  /** The thread's own settings and state, changed while its turn runs on the owner. */
  | { kind: "rename"; displayName: string }
  | { kind: "configure"; changes: ThreadConfiguration }
  | { kind: "setMode"; mode: AgentMode }
  | { kind: "pause" | "unpause" | "archive" | "unarchive" | "delete" }
  /** This process's clients are being asked an approval the turn requested. */
  | { kind: "approvalSeen"; requestId: string }
  | { kind: "approve"; requestId: string; decision: ApprovalDecision };

/**
 * One record of a log a face keeps beside the threads (an AgentCompany run's event): its text
 * and its place in the log's hash chain, which the writer computes.
 */
export interface LogRecord {
  seq: number;
  prevHash: string | null;
  hash: string;
  body: string;
}

/** A face log's record was refused: another writer appended at its place (see Store.appendToLog). */
export class LogConflictError extends Error {
  constructor(readonly log: string) {
    super(`Another writer appended to log ${log} first: its hash chain would fork.`);
    this.name = "LogConflictError";
  }
}

/** A started turn waiting for a slot, as it is offered to other processes. */
export interface OfferedTurn {
  threadId: string;
  turnId: string;
  workspacePath: string;
  /** What the turn runs with (its input and model choice). */
  params: { input: InputPart[]; model?: string; provider?: string; thinking?: ThinkingMode };
}

export interface Store {
  /** Whether other processes write this store too (a cluster): their clients may answer this one's turns. */
  readonly shared: boolean;
  /**
   * Appends an event to the log and applies it to the derived tables. Returns the stored event
   * with its sequence number, strictly increasing within its thread. Synchronous: the process
   * that runs a thread's turns writes its events in order without waiting. Appends are durable
   * once `flush()` has resolved; the store flushes on its own shortly after every append (one
   * transaction per batch).
   */
  append<T extends EventType>(event: NewEvent<T>): Extract<RuntimeEvent, { type: T }>;
  /** Writes any buffered events now. */
  flush(): Promise<void>;
  /**
   * Resolves once the thread's events up to `seq` are committed (true), or were dropped because
   * another process took the thread (false: fenced), without forcing a commit of its own. True
   * at once while the store cannot be written (the events wait for it), and on a store no other
   * process writes.
   */
  committed(threadId: string, seq: number): Promise<boolean>;
  /**
   * Whether the thread is still this process's to write, as the database says now: false when
   * another process has claimed it since (this one learns of that at its next read of the other
   * commits). One read, where `committed` may wait for a commit. True on a store no other
   * process writes.
   */
  stillOwns(threadId: string): Promise<boolean>;
  /**
   * This process wants every event of the thread, its deltas too: a client here follows it. On a
   * shared store, other processes' deltas of threads no client here follows (and this process
   * does not write) are left out of `onCommit`; every other event is reported. Returns the
   * release; a thread is followed while any follow of it is unreleased.
   */
  follow(threadId: string): () => void;
  /**
   * Called after each batch of events is committed, in seq order within each thread, including
   * batches other processes committed to a shared store (see `follow`). Whatever is told to the outside world
   * goes through here, so nobody sees an event that a crash could still lose.
   */
  onCommit(listener: (events: RuntimeEvent[]) => void): void;
  /**
   * Whether events can be committed now. While they cannot (disk full, I/O error), appends wait
   * in a bounded buffer and commit is retried on a timer; reads serve what was committed.
   */
  storageStatus(): StorageStatus;
  /** Called when the storage status changes. */
  onStorageStatus(listener: (status: StorageStatus) => void): void;

  // Ownership. One process writes a thread's events at a time. With one process (SQLite) it
  // owns every thread; on a shared store (PostgreSQL) threads are claimed, and `append` throws
  // `notOwner` for a thread this process has not acquired.
  /**
   * Takes the right to write a thread's events; resolves false while another live process runs
   * a turn on it. A thread appended by its `thread.created` belongs to its creator.
   */
  acquire(threadId: string): Promise<boolean>;
  /**
   * Stops writing a thread (what is pending of it is committed first): the next write here
   * acquires it again. A node lets go of threads it has not written for a while, so what it
   * holds (and reads from the feed) stays what it works on. One process: nothing to do.
   */
  release(threadId: string): Promise<void>;
  /** Called when another process took a thread this one owned (its writes since were refused). */
  onLost(listener: (threadId: string) => void): void;
  /** Called when another process is found gone: its threads' unfinished turns can be taken over. */
  onOrphans(listener: () => void): void;
  /** Whether another live process could take this one's running turns over. One process: false. */
  peersAlive(): Promise<boolean>;
  /**
   * Stops writing these threads at once (an append throws notOwner), keeping what is pending of
   * them for the next flush: once this process has gone, another takes their turns over as it
   * takes over a lost process's. One process: never called (no peers).
   */
  handOver(threadIds: readonly string[]): void;
  /**
   * Hands a command to the process that runs the thread's turn, and resolves with its answer;
   * undefined when no other process runs it (this one answers). Rejects with that process's
   * RuntimeError, or `notOwner` when it did not answer in time (the command still applies once).
   */
  forward(threadId: string, command: ThreadCommand): Promise<{ result: unknown } | undefined>;
  /** Answers the commands other processes forward to the turns this one runs. */
  onCommand(handler: (threadId: string, command: ThreadCommand) => Promise<unknown>): void;

  // The turn queue. A started turn waiting for a slot (--max-running-turns) here is offered to
  // the other processes; one with a slot free takes it, with its thread. One process: no-ops.
  /** Offers a started turn that waits here for a slot. */
  offerTurn(turn: OfferedTurn): Promise<void>;
  /** Takes an offered turn back, to run it here: false when another process took it (and its thread). */
  withdrawTurn(turnId: string): Promise<boolean>;
  /** Takes the longest-offered turn of another process whose workspace `reaches` accepts, claiming its thread. */
  takeOfferedTurn(reaches: (workspacePath: string) => boolean): Promise<OfferedTurn | undefined>;
  /** Called when another process may have offered a turn (a notification, or a periodic look). */
  onTurnOffered(listener: () => void): void;

  // Logs a face keeps beside the threads (an AgentCompany run's hash-chained events): append-
  // only, shared by every process of the store. Not projections: `rebuild()` leaves them be.
  /**
   * Appends records after the log's last, in one transaction. Rejects (logConflict) when one's
   * seq or prevHash is in the log already: another writer appended first, so the chain forked.
   */
  appendToLog(log: string, records: LogRecord[]): Promise<void>;
  /** The log's records with seq > afterSeq, oldest first. */
  readLog(log: string, afterSeq?: number): Promise<LogRecord[]>;
  /** Records, queues and broadcasts a face shares with the store's other processes (face-state.ts). */
  readonly faceState: FaceState;

  // Reads see every event appended before them (they wait for the buffered ones to commit).
  getThread(threadId: string): Promise<Thread | undefined>;
  listThreads(filter: ThreadFilter, opts: { limit: number; cursor?: string }): Promise<ThreadPage>;
  /**
   * Turns of a thread, oldest first, each with its items when `withItems` is set. With
   * `committedBefore`, the read waits only for the thread's events before that seq: a starting
   * turn's history does not wait for the commit of the turn's own first events.
   */
  listTurns(threadId: string, opts: { withItems: boolean; committedBefore?: number }): Promise<Turn[]>;
  /**
   * Each turn's items as stored JSON, one array text per turn, in the turns' order (turns without
   * items left out), leaving out items of the `omit` types: a read of a huge thread sends them as
   * they are. The database joins them: one string per turn rather than one per item, which was
   * most of such a read's time and garbage.
   */
  itemsJsonByTurn(threadId: string, omit?: readonly ItemType[]): Promise<TurnItemsJson[]>;
  /** A turn, with its items unless `withItems` is false. */
  getTurn(turnId: string, opts?: { withItems?: boolean }): Promise<Turn | undefined>;
  listItems(turnId: string): Promise<Item[]>;
  /** Turns left `running` or `waitingApproval` (by a crash), for recovery at start-up. */
  listUnfinishedTurns(): Promise<Turn[]>;
  /** The recorded token usage of every turn of these threads that has one, in turn order. */
  turnUsages(threadIds: string[]): Promise<Array<{ threadId: string; usage: TokenUsage }>>;

  /** Events of one thread with seq > afterSeq, oldest first. */
  eventsAfter(threadId: string, afterSeq: number, limit?: number): Promise<RuntimeEvent[]>;
  /**
   * `eventsAfter` of each cursor's thread, at most `limitEach` each, in one read where the store
   * can. Events not committed yet may be left out: they reach a client live once they are.
   */
  eventsAfterEach(cursors: readonly EventCursor[], limitEach: number): Promise<Map<string, RuntimeEvent[]>>;
  /** The seq of the thread's latest event appended (committed or not), 0 for none. */
  lastSeq(threadId: string): Promise<number>;
  /** The concatenated text of an item's delta events (to recover an item cut off by a crash). */
  deltasOf(itemId: string): Promise<string>;

  hasApprovalRule(workspacePath: string, scopeKey: string): Promise<boolean>;

  /** Drops every derived table and replays the whole log into them. */
  rebuild(): Promise<void>;
  close(): Promise<void>;
}
