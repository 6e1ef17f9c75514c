// The PostgreSQL store: the same log and derived tables as the SQLite store, for several
// Switchyard nodes on one database. `events` is keyed (thread_id, seq), seq contiguous per
// thread from 1; `gid` (an identity) and `xid` (the writing transaction) order the global feed.
// Appends are synchronous: the thread's writer assigns seq from the head it holds in memory and
// commits the batch on the next tick, events and projections in one transaction.
//
// One node writes a thread at a time: it claims the thread (bumping its epoch) and every commit
// checks the epochs of its threads, so a node that lost a thread (it hung, another took over)
// writes nothing more to it. Other nodes' commits arrive through the feed: each commit sends
// one notification, and the node reads the events after its cursor, in (xid, gid) order, only
// from transactions that have all ended (below the snapshot's xmin): none can commit behind it.
import type { Pool, PoolClient } from "pg";
import { checkout, FENCE_LOCK_CLASS, FENCED, inTransaction, migratePostgres, postgresPool } from "./postgres-schema.js";
import { describeDatabase } from "./postgres-url.js";
import { databaseLost, lookIfLost, unreachable } from "./postgres-errors.js";
import { prepared } from "./postgres-prepared.js";
import { arrayInput } from "./postgres-script.js";
import { eventsAfterSeq, eventsOfRow, MAX_RUN, rowColumns, type LogRow } from "./postgres-runs.js";
import { COMMAND_CHANNEL, DEFAULT_LEASE_TTL_MS, nodeAlive, PostgresNode, TURN_CHANNEL } from "./postgres-node.js";
import { PostgresFaceState } from "./postgres-face-state.js";
import { FeedHoldWatch } from "./feed-holder.js";
import { Coalesced } from "../coalesced.js";
import { BatchedLookup } from "./batched-lookup.js";
import { newId } from "../ids.js";
import { RuntimeError } from "../domain/errors.js";
import type { EventType, NewEvent, RuntimeEvent } from "../domain/events.js";
import type { Item, ItemType, Thread, TokenUsage, Turn } from "../domain/model.js";
import { projectEvent, type ProjectionWrite } from "./projection.js";
import {
  THREAD_COLUMNS,
  decodeCursor,
  encodeCursor,
  parse,
  toEvent,
  toItem,
  toThread,
  toTurn,
  type EventRow,
  type ThreadRow,
  type TurnRow,
} from "./rows.js";
import {
  type EventCursor,
  LogConflictError,
  type LogRecord,
  type OfferedTurn,
  type StorageStatus,
  type Store,
  type TurnItemsJson,
  type ThreadCommand,
  type ThreadFilter,
  type ThreadPage,
} from "./store.js";

const THREAD_SELECT = `SELECT ${THREAD_COLUMNS} FROM threads`;
/** A thread's last seq: its last row's (a run's last event's). */
const HEAD_SQL = "SELECT coalesce((SELECT coalesce(last_seq, seq) FROM events WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1), 0) AS seq";
/**
 * The rows holding the `limit` events after a seq (a thread's seqs have no gaps): a run that
 * starts up to MAX_RUN - 1 before it may hold the first of them.
 */
const ROWS_AFTER = (afterSeq: string, limit: string): string =>
  `seq > ${afterSeq} - ${MAX_RUN} AND coalesce(last_seq, seq) > ${afterSeq} AND seq <= ${afterSeq} + ${limit}`;
const TURN_COLUMNS = "id, thread_id, status, started_at, completed_at, token_usage, error, input, model, cancel_reason, diff";
const EVENT_COLUMNS = "seq, last_seq, thread_id, type, ts, data";

interface PendingEvent {
  event: RuntimeEvent;
  /** The thread's epoch when it was appended: the commit checks it still holds. */
  epoch: number;
  /** Serialized at append time: the log holds what was appended, even if the caller later mutates `data`. */
  data: string;
}

export interface PostgresStoreOptions {
  /** Errors of background flushes. */
  onError?: (err: unknown) => void;
  /** How long a node that stopped beating (hung) keeps its threads (default 10 s). */
  leaseTtlMs?: number;
  /** What an operator should hear of that is no failure here: a transaction holding the feed back, and its end. */
  onNotice?: (message: string) => void;
}

/** Events read from the feed per query. */
const FEED_PAGE = 2_000;
/**
 * The least time between the starts of two commits made for appends, and of two feed reads.
 * Each commit is a transaction, a NOTIFY to every node and a feed read on each: with hundreds of
 * threads streaming, committing at every turn of the event loop spent most of the nodes' and the
 * database's CPU on transactions of a few events each. An idle node still commits at once.
 * 10 ms rather than 5: with 200 turns streaming at a model's pace, PostgreSQL's CPU a run 3.5 →
 * 3.1 s, for a median cross-node latency 2 ms longer.
 */
const COMMIT_SPACING_MS = 10;
const FEED_SPACING_MS = 10;
/** How long a forwarded command waits for the owner's answer. */
const COMMAND_TIMEOUT_MS = 10_000;
/** Answered commands are kept this long (for whoever waits on them), then deleted. */
const COMMAND_RETENTION = "1 hour";

/** A row of the feed: an event this node wants, or (`positions` set, no event) the page's last position. */
type FeedRow = Omit<LogRow, "data"> & { data: string | null; xid: string; gid: number; positions: number | null };

/** A node's claim of a thread (see PostgresStore.owned). */
type Claim = { epoch: number; fromSeq: number; head: number };
type OfferRow = { turn_id: string; thread_id: string; workspace_path: string; params: string };
/** An offered turn taken, with the claim of its thread. */
interface TakenOffer {
  row: OfferRow;
  claim: Claim;
}

interface CommitWaiter {
  threadId: string;
  seq: number;
  resolve: (committed: boolean) => void;
}

interface WaitingCommand {
  resolve: (answer: { result: unknown }) => void;
  reject: (error: Error) => void;
}

/** Commit retries while the database is unreachable: the first after this long, then doubling up to the max. */
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 5_000;
/** Events (serialized) held while they cannot be committed; past it, appends are refused. */
const MAX_PENDING_BYTES = 64 * 1024 * 1024;

export class PostgresStore implements Store {
  readonly shared = true;
  private pending: PendingEvent[] = [];
  /** The events of the commit in flight. */
  private committingBatch: PendingEvent[] = [];
  /**
   * A batch whose commit lost its connection before the answer: the database may have applied
   * it (the answer, not the commit, was lost). The next commit looks before writing it again.
   */
  private unanswered: PendingEvent[] = [];
  private pendingBytes = 0;
  /** Cancels the commit scheduled for what is pending, if one is. */
  private scheduled: (() => void) | undefined;
  /** When the latest commit started (performance.now()). */
  private lastCommitAt = -Infinity;
  /** The commit in progress; the next waits for it, so batches commit in append order. */
  private committing: Promise<void> = Promise.resolve();
  private readonly commitListeners: Array<(events: RuntimeEvent[]) => void> = [];
  private readonly statusListeners: Array<(status: StorageStatus) => void> = [];
  private storage: StorageStatus = { available: true };
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_MS;
  private closed = false;
  private node!: PostgresNode;
  /**
   * The threads this node writes: the epoch of its claim, the thread's seq when it claimed, and
   * the seq of the latest event it appended.
   */
  private readonly owned = new Map<string, Claim>();
  private readonly lostListeners: Array<(threadId: string) => void> = [];
  private readonly orphanListeners: Array<() => void> = [];
  private readonly turnOfferListeners: Array<() => void> = [];
  /** The last feed event read: (xid, gid). */
  private cursor: { xid: string; gid: number };
  private readonly feed = new Coalesced(() => this.readFeed(), FEED_SPACING_MS);
  readonly faceState: PostgresFaceState;
  private readonly broadcasts: Coalesced;
  private readonly commands = new Coalesced(() => this.serveCommands());
  private commandHandler: ((threadId: string, command: ThreadCommand) => Promise<unknown>) | undefined;
  private commandsPrunedAt = 0;
  /** The claims of this node's takes of commands that failed: what they took was not applied. */
  private unsettledCommandTakes: string[] = [];
  /** By thread, claims of threads whose answer was lost (acquire). */
  private readonly unsettledClaims = new Map<string, Claim>();
  /** A take of an offered turn that failed, maybe with its answer lost (takeOfferedTurn). */
  private unsettledOffer: TakenOffer | undefined;
  /** Answers to commands this node applied, by command id, not written yet. */
  private readonly unwrittenAnswers = new Map<string, string>();
  /** Threads clients of this node follow, with how many follows each. */
  private readonly followed = new Map<string, number>();
  /** Thread rows asked for together (a thread/started made for each of a node's connections) read in one query. */
  private readonly threadRows = this.rowsById<ThreadRow>(THREAD_SELECT);
  /** The items (their data) of turns asked for together (a turn's end made for each of a node's connections) read in one query. */
  private readonly itemData = new BatchedLookup<string, string[]>(async (turnIds) => {
    const rows = await this.read<{ turn_id: string; data: string }>(
      "SELECT turn_id, data FROM items WHERE turn_id = ANY($1) ORDER BY turn_id, ord",
      [turnIds],
    );
    const byTurn = new Map<string, string[]>();
    for (const row of rows) {
      const items = byTurn.get(row.turn_id);
      if (items) items.push(row.data);
      else byTurn.set(row.turn_id, [row.data]);
    }
    return byTurn;
  });
  /** Turn rows asked for together (turn-end notifications of turns that ended at once) read in one query. */
  private readonly turnRows = this.rowsById<TurnRow>(`SELECT ${TURN_COLUMNS} FROM turns`);
  /** Commands this node forwarded, by id, until their answer arrives. */
  private readonly waiting = new Map<string, WaitingCommand>();
  /** Callers of `committed`, until the events they wait for are committed or dropped. */
  private commitWaiters: CommitWaiter[] = [];

  private constructor(
    private readonly pool: Pool,
    /**
     * The log's own connections: commits, and the feed's reads. Every client's stream waits for
     * them, and in the shared pool they queued behind reads (with 200 turns starting at once, a
     * node's 4 connections had 30 reads waiting, and a commit waited up to 290 ms for one).
     */
    private readonly logPool: Pool,
    xmin: string,
    private readonly onError: (err: unknown) => void,
    leaseTtlMs: number,
  ) {
    this.cursor = { xid: xmin, gid: 0 };
    this.faceState = new PostgresFaceState(pool, () => this.checkout(), xmin, leaseTtlMs);
    this.broadcasts = new Coalesced(() => this.faceState.read());
  }

  /** Connects, migrates, and joins the cluster as a node owning no thread yet. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    // A node that hangs that long inside a transaction has lost its lease: it is ended too.
    const pool = await postgresPool(url, { idleInTransactionMs: leaseTtlMs });
    const logPool = await postgresPool(url, { idleInTransactionMs: leaseTtlMs, max: 2 });
    try {
      await migratePostgres(pool);
      // The feed starts after every transaction that has ended: what they wrote is history.
      const { rows } = await pool.query<{ xmin: string }>("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin");
      const toStderr = (text: string): void => void process.stderr.write(`switchyard store: ${text}\n`);
      const onError = opts.onError ?? ((err) => toStderr(String(err)));
      // An idle client lost its connection: the pool replaces it.
      for (const p of [pool, logPool]) p.on("error", (err) => onError(err));
      const store = new PostgresStore(pool, logPool, rows[0]!.xmin, onError, leaseTtlMs);
      const feedHold = new FeedHoldWatch(pool, opts.onNotice ?? toStderr);
      store.node = await PostgresNode.join(pool, url, leaseTtlMs, {
        onFeed: () => {
          void store.feed.run().catch(onError);
          void store.broadcasts.run().catch(onError);
        },
        onCommands: () => void store.commands.run().catch(onError),
        onPeerGone: () => store.orphanListeners.forEach((listener) => listener()),
        // Said at once, not at a commit's retry: an idle node's clients (and a load balancer
        // asking /readyz) learn within a beat that the database is gone, and that it is back.
        onBeat: () => {
          if (!store.storage.available) void store.flush().catch(() => undefined);
          // A database gone is the beat's to report.
          if (store.unsettledClaims.size > 0) void store.settleClaims().catch(() => undefined);
          void feedHold.check().catch(() => undefined);
        },
        onBeatFailed: (error) => {
          if (databaseLost(error) && !store.closed) store.unavailable(error);
          onError(error);
        },
        onTurnOffered: () => store.turnOfferListeners.forEach((listener) => listener()),
        onError,
      });
      store.faceState.node = store.node.num;
      return store;
    } catch (error) {
      await Promise.all([pool.end(), logPool.end()]);
      throw new Error(
        `Cannot open the PostgreSQL store at ${describeDatabase(url)}: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  // -------------------------------------------------------------------------------------------
  // Writing

  append<T extends EventType>(event: NewEvent<T>): Extract<RuntimeEvent, { type: T }> {
    if (this.closed) throw new Error("Store is closed");
    const data = JSON.stringify(event.data); // first: if it throws, no seq is consumed
    if (!this.storage.available && this.pendingBytes + data.length > MAX_PENDING_BYTES) {
      throw new RuntimeError(
        "storageUnavailable",
        `${this.storage.message} ${MAX_PENDING_BYTES / 1024 / 1024} MiB of events are waiting.`,
        {
          cause: this.storage.cause,
        },
      );
    }
    // A new thread belongs to the node that creates it (the commit records the claim).
    if (event.type === "thread.created" && !this.owned.has(event.threadId))
      this.owned.set(event.threadId, { epoch: 1, fromSeq: 0, head: 0 });
    const claim = this.owned.get(event.threadId);
    if (!claim) throw notOwner(event.threadId);
    const { epoch } = claim;
    const seq = ++claim.head;
    const stored = { type: event.type, threadId: event.threadId, data: event.data, seq, ts: new Date().toISOString() } as RuntimeEvent;
    this.pending.push({ event: stored, epoch, data });
    this.pendingBytes += data.length;
    if (this.storage.available && !this.scheduled) this.scheduleCommit();
    return stored as Extract<RuntimeEvent, { type: T }>;
  }

  follow(threadId: string): () => void {
    this.followed.set(threadId, (this.followed.get(threadId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.followed.get(threadId) ?? 1) - 1;
      if (left > 0) this.followed.set(threadId, left);
      else this.followed.delete(threadId);
    };
  }

  /** Commits what is pending; rejects (storageUnavailable) while the database cannot be written. */
  flush(): Promise<void> {
    this.scheduled?.();
    this.scheduled = undefined;
    this.committing = this.committing.catch(() => undefined).then(() => this.commit());
    return this.committing;
  }

  committed(threadId: string, seq: number): Promise<boolean> {
    const waitsFor = (p: PendingEvent): boolean => p.event.threadId === threadId && p.event.seq <= seq;
    if (!this.storage.available || this.closed) return Promise.resolve(true);
    // Not waiting for a commit: committed, unless the thread was lost (its events dropped).
    if (!this.uncommitted().some((events) => events.some(waitsFor))) return Promise.resolve(this.owned.has(threadId));
    return new Promise((resolve) => this.commitWaiters.push({ threadId, seq, resolve }));
  }

  async stillOwns(threadId: string): Promise<boolean> {
    const claim = this.owned.get(threadId);
    if (!claim) return false;
    const rows = await this.read<{ node: number; epoch: string }>("SELECT node, epoch FROM thread_owners WHERE thread_id = $1", [threadId]);
    // No claim recorded: the thread's creation is not committed yet, so no other node knows it.
    return rows.length === 0 || (rows[0]!.node === this.node.num && Number(rows[0]!.epoch) === claim.epoch);
  }

  /** Answers the callers of `committed` that `answer` has an answer for (undefined: not yet). */
  private answerCommitWaiters(answer: (waiter: CommitWaiter) => boolean | undefined): void {
    if (this.commitWaiters.length === 0) return;
    this.commitWaiters = this.commitWaiters.filter((waiter) => {
      const committed = answer(waiter);
      if (committed === undefined) return true;
      waiter.resolve(committed);
      return false;
    });
  }

  /** Commits what is pending at the loop's next turn, or COMMIT_SPACING_MS after the previous commit started if that is later. */
  private scheduleCommit(): void {
    const commit = (): void => void this.flush().catch(() => undefined);
    const wait = this.lastCommitAt + COMMIT_SPACING_MS - performance.now();
    if (wait > 0) {
      const timer = setTimeout(commit, wait);
      this.scheduled = () => clearTimeout(timer);
    } else {
      const immediate = setImmediate(commit);
      this.scheduled = () => clearImmediate(immediate);
    }
  }

  private async commit(): Promise<void> {
    this.lastCommitAt = performance.now();
    let batch: PendingEvent[] = [];
    let client: PoolClient | undefined;
    let appliedEarlier: RuntimeEvent[] = [];
    try {
      client = await checkout(this.logPool, (error) => this.onError(error));
      if (this.unanswered.length > 0) appliedEarlier = await this.settleUnanswered(client);
      for (;;) {
        batch = batch.concat(this.pending);
        this.pending = [];
        this.committingBatch = batch;
        if (batch.length === 0) {
          // Nothing to write: while the database was unavailable, a round trip says it is back
          // (a pooled connection may be one opened before it went).
          if (!this.storage.available) await client.query("SELECT 1");
          break;
        }
        const writes = batch.flatMap((p) => projectEvent(p.event));
        const fenced = await this.writeBatch(client, batch, writes);
        if (fenced.length === 0) break;
        // Another node took these threads: their events are dropped, the rest is committed.
        for (const threadId of fenced) this.lose(threadId);
        batch = batch.filter((p) => this.owned.has(p.event.threadId));
      }
    } catch (error) {
      await client?.query("ROLLBACK").catch(() => undefined);
      client?.release(true); // its connection may be what failed: not reused
      client = undefined;
      // Not known to be committed: the batch goes back in front, so seq order is kept.
      this.pending = batch.concat(this.pending);
      if (batch.length > 0 && databaseLost(error)) this.unanswered = batch;
      if (appliedEarlier.length > 0) for (const listener of this.commitListeners) listener(appliedEarlier);
      const unavailable = this.unavailable(error);
      this.answerCommitWaiters(() => true); // the events wait for the database; their callers do not
      throw unavailable;
    } finally {
      this.committingBatch = [];
      client?.release();
    }
    this.pendingBytes = this.pending.reduce((n, p) => n + p.data.length, 0);
    if (!this.storage.available) this.setStorage({ available: true });
    const events = [...appliedEarlier, ...batch.map((p) => p.event)];
    if (events.length === 0) return;
    this.answerCommitWaitersOf(events);
    for (const listener of this.commitListeners) listener(events);
  }

  /** Answers the callers of `committed` whose events are among these (a thread's commit in seq order). */
  private answerCommitWaitersOf(events: RuntimeEvent[]): void {
    if (this.commitWaiters.length === 0) return;
    const heads = new Map<string, number>();
    for (const event of events) heads.set(event.threadId, Math.max(event.seq, heads.get(event.threadId) ?? 0));
    this.answerCommitWaiters((waiter) => ((heads.get(waiter.threadId) ?? 0) >= waiter.seq ? true : undefined));
  }

  /**
   * Whether the batch whose commit went unanswered was applied, by its first event: that row,
   * written by this node at that time, is there. (A batch is one transaction: all of it or none.)
   * If it was, it leaves the pending events and is returned, to be told as committed.
   */
  private async settleUnanswered(client: PoolClient): Promise<RuntimeEvent[]> {
    const batch = this.unanswered;
    const { event } = batch[0]!;
    const { rowCount } = await client.query(
      prepared("SELECT 1 FROM events WHERE thread_id = $1 AND seq = $2 AND writer = $3 AND split_part(ts, ',', 1) = $4", [
        event.threadId,
        event.seq,
        this.node.num,
        event.ts,
      ]),
    );
    this.unanswered = [];
    if (rowCount === 0) return [];
    const applied = new Set(batch);
    this.pending = this.pending.filter((p) => !applied.has(p));
    return batch.map((p) => p.event);
  }

  /**
   * Commits a batch with its projection writes in one transaction and one round trip:
   * switchyard_append checks the epoch of every thread in it, inserts the events and notifies
   * the other nodes. A batch of events alone (a run of deltas, most commits) is that call; any
   * other calls switchyard_commit, which also claims the threads the batch creates (first) and
   * makes the projection's writes. Returns the threads it was fenced from (then nothing is
   * committed).
   *
   * One round trip because the other nodes read the feed only below the oldest open transaction:
   * a transaction held open across round trips, while this node's event loop was busy elsewhere,
   * held every node's feed back as long (90 ms at p90, up to 280 ms, with 3 nodes under load).
   */
  private async writeBatch(client: PoolClient, batch: PendingEvent[], writes: ProjectionWrite[]): Promise<string[]> {
    const created = batch.filter((p) => p.event.type === "thread.created").map((p) => p.event.threadId);
    const epochs = new Map(batch.map((p) => [p.event.threadId, p.epoch]));
    const fence = [arrayInput([...epochs.keys()]), arrayInput([...epochs.values()])];
    try {
      if (created.length === 0 && writes.length === 0)
        await client.query(
          prepared(
            "SELECT switchyard_append($1, $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::text[])",
            [this.node.num, ...fence, ...rowColumns(batch)],
          ),
        );
      else
        await client.query(
          prepared(
            "SELECT switchyard_commit($1, $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::jsonb)",
            [this.node.num, arrayInput(created), ...fence, ...rowColumns(batch), JSON.stringify(writes)],
          ),
        );
      return [];
    } catch (error) {
      if ((error as { code?: string }).code === FENCED) return JSON.parse((error as { detail: string }).detail) as string[];
      throw error;
    }
  }

  /** This node no longer writes the thread: what it had not committed of it is dropped. */
  private lose(threadId: string): void {
    if (!this.owned.delete(threadId)) return;
    this.pending = this.pending.filter((p) => p.event.threadId !== threadId);
    this.answerCommitWaiters((waiter) => (waiter.threadId === threadId ? false : undefined));
    for (const listener of this.lostListeners) listener(threadId);
  }

  /** Reads the events other nodes committed since the cursor and reports them as commits. */
  private async readFeed(): Promise<void> {
    // Nobody listens yet (the store opens before the runtime, which a server answering its
    // first requests early loads after them): what was read now would be lost to it. The
    // first listener starts the reading (onCommit).
    if (this.commitListeners.length === 0) return;
    for (let full = true; full && !this.closed;) {
      // Every position is read (the cursor moves over all of them), the event only where this
      // node wants it: its own events, and deltas of threads it neither follows nor writes, stay
      // in the database, and the page's last position comes all the same, with the number of
      // positions read. (Reading 102,000 positions of which a node wants a third, as in the
      // cluster bench: 0.18-0.24 s of the node's CPU against 0.36-0.56 s, the database's alike.)
      // Rows come in the page's order: a window over the ordered page and a filter over that
      // keep it (an ORDER BY outside would sort again, 0.1 s more of the database's CPU there).
      // `= ANY (SELECT unnest(…))`, not `= ANY($3)`: a subquery's set is hashed once, where the
      // prepared statement's generic plan searches a parameter array row by row (3.3 ms per
      // 2,000 rows with 134 threads, against 0.7).
      const { rows } = await this.logPool.query<FeedRow>(
        prepared(
          `SELECT xid::text AS xid, gid, seq, last_seq, thread_id, type, ts, data, CASE WHEN k = n THEN n::int END AS positions
           FROM (
             SELECT page.*, row_number() OVER () AS k, count(*) OVER () AS n
             FROM (
               SELECT xid, gid, seq, last_seq, thread_id, type, ts,
                      CASE WHEN writer IS DISTINCT FROM $4 AND (type <> 'item.delta' OR thread_id = ANY (SELECT unnest($3::text[]))) THEN data END AS data
               FROM events
               WHERE (xid, gid) > ($1::xid8, $2) AND xid < pg_snapshot_xmin(pg_current_snapshot())
               ORDER BY xid, gid LIMIT ${FEED_PAGE}
             ) page
           ) counted
           WHERE data IS NOT NULL OR k = n`,
          [this.cursor.xid, this.cursor.gid, [...new Set([...this.followed.keys(), ...this.owned.keys()])], this.node.num],
        ),
      );
      const last = rows.at(-1);
      if (!last) break;
      full = last.positions === FEED_PAGE;
      this.cursor = { xid: last.xid, gid: last.gid };
      const events = rows.flatMap((r) => (r.data !== null ? eventsOfRow({ ...r, data: r.data }) : []));
      if (events.length === 0) continue;
      // Another node wrote a thread this one holds, after it claimed it: the other owns it now.
      for (const event of events) if (event.seq > (this.owned.get(event.threadId)?.fromSeq ?? Infinity)) this.lose(event.threadId);
      for (const listener of this.commitListeners) listener(events);
    }
  }

  async forward(threadId: string, command: ThreadCommand): Promise<{ result: unknown } | undefined> {
    if (this.owned.has(threadId)) return undefined;
    const id = newId("cmd");
    const forwarded = await lookIfLost(
      async () =>
        (
          await this.pool.query(
            prepared(
              `WITH sent AS (
               INSERT INTO thread_commands (id, thread_id, command)
               SELECT $1, $2, $3 WHERE EXISTS (
                 SELECT 1 FROM thread_owners o WHERE o.thread_id = $2 AND o.node <> $4
                    AND EXISTS (SELECT 1 FROM turns t WHERE t.thread_id = $2 AND t.status IN ('running', 'waitingApproval')))
               RETURNING thread_id)
             SELECT pg_notify('${COMMAND_CHANNEL}', thread_id) FROM sent`,
              [id, threadId, JSON.stringify(command), this.node.num],
            ),
          )
        ).rowCount === 1,
      // There all the same, it is waited for, not reported failed (the client would send it
      // again, and it would apply twice).
      () => this.found("SELECT 1 FROM thread_commands WHERE id = $1", [id]),
    );
    if (!forwarded) return undefined; // no turn runs elsewhere
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(
          new RuntimeError(
            "notOwner",
            `The node running thread ${threadId}'s turn did not answer in ${COMMAND_TIMEOUT_MS / 1000} s; the command applies once, when a node takes the thread over.`,
            { threadId, commandId: id },
          ),
        );
      }, COMMAND_TIMEOUT_MS);
      const settle = (): void => {
        clearTimeout(timer);
        this.waiting.delete(id);
      };
      this.waiting.set(id, {
        resolve: (answer) => (settle(), resolve(answer)),
        reject: (error) => (settle(), reject(error)),
      });
    });
  }

  onCommand(handler: (threadId: string, command: ThreadCommand) => Promise<unknown>): void {
    this.commandHandler = handler;
  }

  /**
   * Applies the commands forwarded to threads this node owns (each once), and collects the
   * answers to its own. Each take of commands is marked with a claim of its own. When the take
   * fails (its answer may be lost: the connection broke as it committed), or an answer cannot be
   * written, the next take also takes what that claim holds unanswered, which nobody applied:
   * the answers this node could not write are written first.
   */
  private async serveCommands(): Promise<void> {
    if (this.commandHandler) {
      for (const [id, answer] of this.unwrittenAnswers) await this.writeAnswer(id, answer);
      const claim = newId("claim");
      const unsettled = this.unsettledCommandTakes;
      this.unsettledCommandTakes = [...unsettled, claim]; // until all it takes is answered
      // Usually nothing is unsettled: then the pending commands' index finds what to take.
      const unanswered = unsettled.length > 0 ? " OR (c.claim = ANY($3) AND c.result IS NULL)" : "";
      const { rows } = await this.pool.query<{ id: string; thread_id: string; command: string; created_at: Date }>(
        prepared(
          `UPDATE thread_commands SET applied_at = now(), claim = $2 WHERE id IN (
           SELECT c.id FROM thread_commands c JOIN thread_owners o ON o.thread_id = c.thread_id AND o.node = $1
           WHERE c.applied_at IS NULL${unanswered} FOR UPDATE OF c SKIP LOCKED)
         RETURNING id, thread_id, command, created_at`,
          [this.node.num, claim, ...(unanswered ? [unsettled] : [])],
        ),
      );
      for (const row of rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime())) {
        let answer: { result: unknown } | { error: { code: string; message: string; data?: unknown } };
        try {
          answer = { result: (await this.commandHandler(row.thread_id, parse<ThreadCommand>(row.command))) ?? null };
        } catch (error) {
          answer =
            error instanceof RuntimeError
              ? { error: { code: error.code, message: error.message, data: error.data } }
              : { error: { code: "internal", message: String(error) } };
        }
        const text = JSON.stringify(answer);
        this.unwrittenAnswers.set(row.id, text);
        await this.writeAnswer(row.id, text);
      }
      this.unsettledCommandTakes = [];
    }
    if (this.waiting.size > 0) {
      const { rows } = await this.pool.query<{ id: string; result: string }>(
        prepared("SELECT id, result FROM thread_commands WHERE id = ANY($1) AND result IS NOT NULL", [[...this.waiting.keys()]]),
      );
      for (const row of rows) {
        const answer = parse<
          { result: unknown } | { error: { code: RuntimeError["code"]; message: string; data?: Record<string, unknown> } }
        >(row.result);
        if ("error" in answer)
          this.waiting.get(row.id)?.reject(new RuntimeError(answer.error.code, answer.error.message, answer.error.data));
        else this.waiting.get(row.id)?.resolve(answer);
      }
    }
    // Answered commands are kept a while (a forwarder may read its answer late), then dropped:
    // looked at once a minute, not on every command.
    if (Date.now() - this.commandsPrunedAt > 60_000) {
      this.commandsPrunedAt = Date.now();
      await this.pool.query(`DELETE FROM thread_commands WHERE applied_at < now() - interval '${COMMAND_RETENTION}'`);
    }
  }

  /** Writes the answer to an applied command and wakes its forwarder. */
  private async writeAnswer(id: string, answer: string): Promise<void> {
    await this.pool.query(
      prepared(
        `WITH answered AS (UPDATE thread_commands SET result = $2 WHERE id = $1 RETURNING 1)
       SELECT pg_notify('${COMMAND_CHANNEL}', '') FROM answered`,
        [id, answer],
      ),
    );
    this.unwrittenAnswers.delete(id);
  }

  async acquire(threadId: string): Promise<boolean> {
    if (this.owned.has(threadId)) return true;
    let claiming: Claim | undefined;
    const claim = await this.transaction(async (client) => {
      const { rows } = await client.query<{ node: number; epoch: number; alive: boolean; busy: boolean }>(
        prepared(
          `SELECT o.node, o.epoch, ${nodeAlive("o.node", this.node.leaseTtlMs)} AS alive,
                EXISTS (SELECT 1 FROM turns t WHERE t.thread_id = o.thread_id AND t.status IN ('running', 'waitingApproval')) AS busy
         FROM thread_owners o WHERE o.thread_id = $1 FOR UPDATE`,
          [threadId],
        ),
      );
      const owner = rows[0];
      if (owner && owner.node !== this.node.num && owner.alive && owner.busy) return undefined;
      claiming = await this.claim(client, threadId);
      return claiming;
    }).catch((error: unknown) => {
      // Its answer lost, the claim may have been committed: the thread is then this node's, and
      // no other node takes over a turn left running on it (settleClaims).
      if (claiming && databaseLost(error)) this.unsettledClaims.set(threadId, claiming);
      // A connection that could not be had is unreachable already; what failed in the
      // transaction marks the store unavailable, as a commit does.
      throw error instanceof RuntimeError ? error : this.unavailable(error);
    });
    if (claim) this.owned.set(threadId, claim);
    return claim !== undefined;
  }

  /**
   * Claims of threads whose answer was lost, looked at each beat: a thread found claimed is this
   * node's, and the runtime is told to take over what it may have left running (onOrphans).
   */
  private async settleClaims(): Promise<void> {
    let found = false;
    for (const [threadId, claim] of this.unsettledClaims) {
      const held = await this.holds(threadId, claim.epoch);
      this.unsettledClaims.delete(threadId);
      if (!held || this.owned.has(threadId)) continue;
      this.owned.set(threadId, claim);
      found = true;
    }
    if (found) for (const listener of this.orphanListeners) listener();
  }

  /** Whether the thread is this node's at that claim's epoch (no node claimed it since). */
  private async holds(threadId: string, epoch: number): Promise<boolean> {
    const rows = await this.read("SELECT 1 FROM thread_owners WHERE thread_id = $1 AND node = $2 AND epoch = $3", [
      threadId,
      this.node.num,
      epoch,
    ]);
    return rows.length > 0;
  }

  /** True when the query finds a row (a write looked for: see lookIfLost). */
  private async found(sql: string, params: unknown[]): Promise<true | undefined> {
    return (await this.read(sql, params)).length > 0 || undefined;
  }

  async release(threadId: string): Promise<void> {
    if (!this.owned.has(threadId)) return;
    if (this.pending.some((p) => p.event.threadId === threadId)) await this.flush();
    // The claim stays recorded (a node that writes the thread next claims it, as from any idle
    // owner); this node only stops writing it and reading its deltas.
    this.owned.delete(threadId);
  }

  async peersAlive(): Promise<boolean> {
    const { rows } = await this.pool.query<{ alive: boolean }>(
      prepared(`SELECT EXISTS (SELECT 1 FROM nodes n WHERE n.num <> $1 AND ${nodeAlive("n.num", this.node.leaseTtlMs)}) AS alive`, [
        this.node.num,
      ]),
    );
    return rows[0]?.alive === true;
  }

  handOver(threadIds: readonly string[]): void {
    // The claims stay recorded, with this node's epoch, so what is pending still commits; once
    // this node has left, another finds their turns orphaned and claims them (onOrphans).
    for (const threadId of threadIds) this.owned.delete(threadId);
  }

  /**
   * Claims a thread in the caller's transaction; it is this node's once that commits. A claim
   * always moves the epoch on, also over this node's own earlier claim: writes it made before
   * it lost the thread can never land after.
   */
  private async claim(client: PoolClient, threadId: string): Promise<Claim> {
    // The owner's fence lock, exclusively: the claim waits for the owner's commits in flight (so
    // the head below includes them), and the owner's later commits wait for it and are fenced.
    const { rows } = await client.query<{ node: number }>(
      prepared("SELECT node FROM thread_owners WHERE thread_id = $1 FOR UPDATE", [threadId]),
    );
    if (rows[0]) await client.query(prepared("SELECT pg_advisory_xact_lock($1, $2)", [FENCE_LOCK_CLASS, rows[0].node]));
    const claimed = await client.query<{ epoch: number }>(
      prepared(
        `INSERT INTO thread_owners (thread_id, node, epoch) VALUES ($1, $2, 1)
       ON CONFLICT (thread_id) DO UPDATE SET node = excluded.node, epoch = thread_owners.epoch + 1, claimed_at = now()
       RETURNING epoch`,
        [threadId, this.node.num],
      ),
    );
    const head = await client.query<{ seq: number }>(prepared(HEAD_SQL, [threadId]));
    return { epoch: claimed.rows[0]!.epoch, fromSeq: head.rows[0]!.seq, head: head.rows[0]!.seq };
  }

  // -------------------------------------------------------------------------------------------
  // The turn queue

  async offerTurn(turn: OfferedTurn): Promise<void> {
    await lookIfLost(
      async () => {
        await this.pool.query(
          prepared(
            `WITH offered AS (
             INSERT INTO turn_queue (turn_id, thread_id, node, workspace_path, params) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT DO NOTHING RETURNING 1)
           SELECT pg_notify('${TURN_CHANNEL}', '') FROM offered`,
            [turn.turnId, turn.threadId, this.node.num, turn.workspacePath, JSON.stringify(turn.params)],
          ),
        );
        return true;
      },
      // There all the same, it was made: another node may take it, and this one must withdraw it
      // before running the turn itself.
      () => this.found("SELECT 1 FROM turn_queue WHERE turn_id = $1", [turn.turnId]),
    );
  }

  async withdrawTurn(turnId: string): Promise<boolean> {
    return lookIfLost(
      // Waits for a node that is taking it (its row lock) to commit: then the row is gone.
      async () => (await this.pool.query(prepared("DELETE FROM turn_queue WHERE turn_id = $1", [turnId]))).rowCount === 1,
      // An offer still there is withdrawn again; one gone was withdrawn here if the thread is
      // still this node's (a node that takes an offer claims the thread).
      async () => {
        const [look] = await this.read<{ offered: boolean; held: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM turn_queue WHERE turn_id = $1) AS offered,
                  EXISTS (SELECT 1 FROM turns t JOIN thread_owners o USING (thread_id) WHERE t.id = $1 AND o.node = $2) AS held`,
          [turnId, this.node.num],
        );
        return look!.offered ? this.withdrawTurn(turnId) : look!.held;
      },
    );
  }

  /**
   * Takes the oldest turn another node offered that this one can run, and claims its thread.
   * A take whose answer was lost (the connection broke as it committed) may have taken the
   * offer all the same: no node would run that turn, and its node would let it go. The next
   * take looks first whether the thread is this node's at that claim, and then runs the turn.
   */
  async takeOfferedTurn(reaches: (workspacePath: string) => boolean): Promise<OfferedTurn | undefined> {
    const earlier = this.unsettledOffer;
    if (earlier) {
      const held = await this.holds(earlier.row.thread_id, earlier.claim.epoch);
      this.unsettledOffer = undefined;
      if (held) return this.tookOffer(earlier);
    }
    // Every node asks at each beat and after each turn, and nearly always there is nothing to
    // take: one read says so, rather than a transaction of four statements locking the queue.
    const [queue] = await this.read<{ offered: boolean }>("SELECT EXISTS (SELECT 1 FROM turn_queue) AS offered");
    if (!queue!.offered) return undefined;
    let taking: TakenOffer | undefined;
    const taken = await this.transaction(async (client) => {
      // Offers whose node no longer owns the thread or whose turn ended are stale (the node died
      // and its turn was taken over): dropped. The rest whose turn is recorded running, oldest
      // first, skipping those another node is taking.
      await client.query(
        prepared(
          `DELETE FROM turn_queue q
         WHERE NOT EXISTS (SELECT 1 FROM thread_owners o WHERE o.thread_id = q.thread_id AND o.node = q.node)
            OR EXISTS (SELECT 1 FROM turns t WHERE t.id = q.turn_id AND t.status <> 'running')`,
        ),
      );
      const { rows } = await client.query<OfferRow>(
        prepared(
          `SELECT q.turn_id, q.thread_id, q.workspace_path, q.params FROM turn_queue q
         JOIN turns t ON t.id = q.turn_id AND t.status = 'running'
         WHERE q.node <> $1 ORDER BY q.queued_at FOR UPDATE OF q SKIP LOCKED LIMIT 20`,
          [this.node.num],
        ),
      );
      const row = rows.find((r) => reaches(r.workspace_path));
      if (!row) return undefined;
      await client.query(prepared("DELETE FROM turn_queue WHERE turn_id = $1", [row.turn_id]));
      taking = { row, claim: await this.claim(client, row.thread_id) };
      return taking;
    }).catch((error: unknown) => {
      if (taking) this.unsettledOffer = taking;
      throw unreachable(error);
    });
    return taken && this.tookOffer(taken);
  }

  private tookOffer({ row, claim }: TakenOffer): OfferedTurn {
    this.owned.set(row.thread_id, claim);
    return {
      turnId: row.turn_id,
      threadId: row.thread_id,
      workspacePath: row.workspace_path,
      params: JSON.parse(row.params) as OfferedTurn["params"],
    };
  }

  onTurnOffered(listener: () => void): void {
    this.turnOfferListeners.push(listener);
  }

  // -------------------------------------------------------------------------------------------
  // Face logs

  async appendToLog(log: string, records: LogRecord[]): Promise<void> {
    try {
      await this.pool.query(
        prepared(
          "INSERT INTO face_logs (log, seq, prev_hash, hash, body) SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[])",
          [log, records.map((r) => r.seq), records.map((r) => r.prevHash), records.map((r) => r.hash), records.map((r) => r.body)],
        ),
      );
    } catch (error) {
      throw (error as { code?: unknown }).code === "23505" ? new LogConflictError(log) : unreachable(error); // unique_violation
    }
  }

  async readLog(log: string, afterSeq = 0): Promise<LogRecord[]> {
    const rows = await this.rows<{ seq: string; prev_hash: string | null; hash: string; body: string }>(
      "SELECT seq, prev_hash, hash, body FROM face_logs WHERE log = $1 AND seq > $2 ORDER BY seq",
      [log, afterSeq],
    );
    return rows.map((r) => ({ seq: Number(r.seq), prevHash: r.prev_hash, hash: r.hash, body: r.body }));
  }

  /**
   * A pooled connection for a transaction. Its connection can break while it is checked out
   * (the database restarts); the error then surfaces in the query in flight, and the listener
   * keeps it from being an uncaught 'error' event meanwhile. Released with `true` after a
   * failure, so the pool drops it instead of reusing it.
   */
  private checkout(): Promise<PoolClient> {
    return checkout(this.pool, (error) => this.onError(error));
  }
  /**
   * Runs `work` in a transaction on a pooled connection: committed when it returns, rolled back
   * when it throws (the connection then dropped: it may be what failed). A connection that
   * cannot be had is the retryable storageUnavailable; `work`'s errors are thrown as they are.
   */
  private transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const connect = (): Promise<PoolClient> =>
      this.checkout().catch((error: unknown) => {
        throw unreachable(error);
      });
    return inTransaction(connect, work);
  }

  onLost(listener: (threadId: string) => void): void {
    this.lostListeners.push(listener);
  }

  onOrphans(listener: () => void): void {
    this.orphanListeners.push(listener);
  }

  /** The database refused or could not be reached: say so (once), retry on a timer. */
  private unavailable(error: unknown): RuntimeError {
    const cause = (error as { code?: unknown }).code;
    const message = `The database cannot be written (${error instanceof Error ? error.message : String(error)}); events wait and are retried.`;
    if (this.storage.available) {
      this.setStorage({
        available: false,
        cause: typeof cause === "string" ? cause : "unreachable",
        message,
        since: new Date().toISOString(),
      });
    }
    this.retryLater();
    return new RuntimeError("storageUnavailable", message, { cause: typeof cause === "string" ? cause : "unreachable" });
  }

  private retryLater(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.flush().then(
        () => (this.retryDelayMs = RETRY_FIRST_MS),
        (error: unknown) => {
          this.retryDelayMs = Math.min(this.retryDelayMs * 2, RETRY_MAX_MS);
          if (!(error instanceof RuntimeError)) this.onError(error);
        },
      );
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }

  private setStorage(status: StorageStatus): void {
    this.storage = status;
    for (const listener of this.statusListeners) listener(status);
  }

  onCommit(listener: (events: RuntimeEvent[]) => void): void {
    this.commitListeners.push(listener);
    if (this.commitListeners.length === 1) void this.feed.run().catch(this.onError);
  }

  storageStatus(): StorageStatus {
    return this.storage;
  }

  onStorageStatus(listener: (status: StorageStatus) => void): void {
    this.statusListeners.push(listener);
  }

  // -------------------------------------------------------------------------------------------
  // Reading. A read commits what is pending of what it reads first, so it sees every append
  // (when it can).

  /**
   * A read that sees this node's own appends: it waits for them to be committed first. Given the
   * thread it reads, only when this node has events of that thread not committed yet: a read of
   * another thread (a turn's start, every watcher's turn-end notification) does not wait for, or
   * force, a commit of everything streaming on this node (turn/start answered after a median
   * 130–420 ms with 200 turns streaming, and each read cut a commit short of its spacing).
   */
  private async rows<R extends object>(sql: string, params: unknown[] = [], threadId?: string, beforeSeq?: number): Promise<R[]> {
    await this.commitOwn(threadId, undefined, beforeSeq);
    return this.read<R>(sql, params);
  }

  /** Rows of `select` by id: those asked for together are read in one query. */
  private rowsById<R extends { id: string }>(select: string): BatchedLookup<string, R> {
    return new BatchedLookup(async (ids) => {
      const rows = await this.read<R>(`${select} WHERE id = ANY($1)`, [ids]);
      return new Map(rows.map((row) => [row.id, row]));
    });
  }

  /** A read as the database has it now. */
  private async read<R extends object>(sql: string, params: unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query<R>(prepared(sql, params))).rows;
    } catch (error) {
      throw unreachable(error);
    }
  }

  /**
   * This node's events not committed yet: pending, and the commit's in flight. Taken before a
   * read, it still says what was not committed when the read began: both arrays are replaced,
   * never emptied, as their events move on.
   */
  private uncommitted(): PendingEvent[][] {
    return [this.pending, this.committingBatch];
  }

  /**
   * Commits this node's appended events first when some are not committed yet (or were, when
   * `uncommitted` was taken): of the thread, or of any; true if it did (when the database can be
   * reached). A thread's wait for the commit already scheduled: many reads at once (a burst of
   * turn/starts) share commits rather than queue one each.
   */
  private async commitOwn(threadId?: string, uncommitted = this.uncommitted(), beforeSeq = Infinity): Promise<boolean> {
    if (!this.storage.available) return false;
    if (threadId === undefined) {
      if (!uncommitted.some((events) => events.length > 0)) return false;
      await this.flush().catch(() => undefined);
      return true;
    }
    let head = 0;
    for (const events of uncommitted) {
      for (const p of events) if (p.event.threadId === threadId && p.event.seq < beforeSeq) head = Math.max(head, p.event.seq);
    }
    if (head === 0) return false;
    await this.committed(threadId, head);
    return true;
  }

  async getThread(threadId: string): Promise<Thread | undefined> {
    await this.commitOwn(threadId);
    const row = await this.threadRows.get(threadId);
    return row && toThread(row);
  }

  async listThreads(filter: ThreadFilter, opts: { limit: number; cursor?: string }): Promise<ThreadPage> {
    const limit = Math.min(Math.max(1, Math.floor(opts.limit) || 1), 1_000_000);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (column: string, value: string | undefined): void => {
      if (value === undefined) return;
      params.push(value);
      where.push(`${column} = $${params.length}`);
    };
    add("user_id", filter.userId);
    add("origin_channel", filter.originChannel);
    add("workspace_path", filter.workspacePath);
    add("channel_context", filter.channelContext);
    add("status", filter.status);
    if (filter.hideArchived) where.push("status <> 'archived'");
    if (opts.cursor !== undefined) {
      params.push(...decodeCursor(opts.cursor));
      where.push(`(last_active_at, id) < ($${params.length - 1}, $${params.length})`);
    }
    params.push(limit + 1);
    const sql =
      THREAD_SELECT +
      (where.length > 0 ? ` WHERE ${where.join(" AND ")}` : "") +
      ` ORDER BY last_active_at DESC, id DESC LIMIT $${params.length}`;
    const rows = await this.rows<ThreadRow>(sql, params);
    const page: ThreadPage = { threads: rows.slice(0, limit).map(toThread) };
    if (rows.length > limit) page.nextCursor = encodeCursor(rows[limit - 1]!.last_active_at, rows[limit - 1]!.id);
    return page;
  }

  async listTurns(threadId: string, opts: { withItems: boolean; committedBefore?: number }): Promise<Turn[]> {
    const before = opts.committedBefore;
    const turns = (
      await this.rows<TurnRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE thread_id = $1 ORDER BY seq`, [threadId], threadId, before)
    ).map(toTurn);
    if (!opts.withItems) return turns;
    const byTurn = new Map<string, Item[]>();
    for (const turn of turns) byTurn.set(turn.id, (turn.items = []));
    for (const { data } of await this.rows<{ data: string }>(
      "SELECT data FROM items WHERE thread_id = $1 ORDER BY ord",
      [threadId],
      threadId,
      before,
    )) {
      const item = toItem(data);
      byTurn.get(item.turnId)?.push(item);
    }
    return turns;
  }

  async itemsJsonByTurn(threadId: string, omit: readonly ItemType[] = []): Promise<TurnItemsJson[]> {
    const rows = await this.rows<{ id: string; json: string | null }>(
      `SELECT t.id, (SELECT '[' || string_agg(data, ',' ORDER BY ord) || ']' FROM items
         WHERE turn_id = t.id AND type <> ALL($2::text[])) AS json
       FROM turns t WHERE t.thread_id = $1 ORDER BY t.seq`,
      [threadId, omit],
      threadId,
    );
    return rows.flatMap((r) => (r.json === null ? [] : [{ turnId: r.id, json: r.json }]));
  }

  async getTurn(turnId: string, opts: { withItems?: boolean } = {}): Promise<Turn | undefined> {
    // The turn's thread is known once its row is read: read again after a commit if this node
    // had events of it (or, with no row yet, of any thread) not committed when the read began.
    // A commit that ended while the read was on its way is not seen in the row.
    const uncommitted = this.uncommitted();
    let row = await this.turnRows.get(turnId);
    if (await this.commitOwn(row?.thread_id, uncommitted)) row = await this.turnRows.get(turnId);
    if (!row) return undefined;
    const turn = toTurn(row);
    if (opts.withItems !== false) turn.items = await this.listItems(turnId);
    return turn;
  }

  async listItems(turnId: string): Promise<Item[]> {
    await this.commitOwn();
    // Each caller gets items of its own, parsed from the shared rows.
    return ((await this.itemData.get(turnId)) ?? []).map((data) => toItem(data));
  }

  async listUnfinishedTurns(): Promise<Turn[]> {
    const sql = `SELECT ${TURN_COLUMNS} FROM turns WHERE status IN ('running', 'waitingApproval') ORDER BY seq`;
    return (await this.rows<TurnRow>(sql)).map(toTurn);
  }

  async turnUsages(threadIds: string[]): Promise<Array<{ threadId: string; usage: TokenUsage }>> {
    if (threadIds.length === 0) return [];
    const rows = await this.rows<{ thread_id: string; token_usage: string }>(
      "SELECT thread_id, token_usage FROM turns WHERE thread_id = ANY($1) AND token_usage IS NOT NULL ORDER BY thread_id, seq",
      [threadIds],
    );
    return rows.map((r) => ({ threadId: r.thread_id, usage: parse<TokenUsage>(r.token_usage) }));
  }

  async eventsAfter(threadId: string, afterSeq: number, limit = 10_000): Promise<RuntimeEvent[]> {
    const sql = `SELECT ${EVENT_COLUMNS} FROM events WHERE thread_id = $1 AND ${ROWS_AFTER("$2", "$3")} ORDER BY seq`;
    return eventsAfterSeq(await this.rows<LogRow>(sql, [threadId, afterSeq, limit], threadId), afterSeq, limit);
  }

  async eventsAfterEach(cursors: readonly EventCursor[], limitEach: number): Promise<Map<string, RuntimeEvent[]>> {
    if (cursors.length === 0) return new Map();
    // One round trip for every thread, and no commit of this node's pending events first (as
    // `eventsAfter` makes): a client catching up on a hundred threads read them one query after
    // another, each forcing a commit on a busy node, seconds while it waited. What is not
    // committed yet reaches the client live once it is.
    const rows = await this.read<LogRow>(
      `SELECT e.*
       FROM unnest($1::text[], $2::bigint[]) AS c(thread_id, after_seq)
       CROSS JOIN LATERAL (
         SELECT ${EVENT_COLUMNS} FROM events WHERE thread_id = c.thread_id AND ${ROWS_AFTER("c.after_seq", "$3")} ORDER BY seq) e`,
      [cursors.map((c) => c.threadId), cursors.map((c) => c.afterSeq), limitEach],
    );
    const rowsOf = new Map(cursors.map(({ threadId }) => [threadId, [] as LogRow[]]));
    for (const row of rows) rowsOf.get(row.thread_id)!.push(row);
    return new Map(cursors.map(({ threadId, afterSeq }) => [threadId, eventsAfterSeq(rowsOf.get(threadId)!, afterSeq, limitEach)]));
  }

  async lastSeq(threadId: string): Promise<number> {
    const head = this.owned.get(threadId)?.head;
    if (head !== undefined) return head;
    const [row] = await this.rows<{ seq: number }>(HEAD_SQL, [threadId], threadId);
    return row!.seq;
  }

  async deltasOf(itemId: string): Promise<string> {
    // A run's deltas are all of one item: its first names it.
    const rows = await this.rows<LogRow>(
      `SELECT e.seq, e.last_seq, e.thread_id, e.type, e.ts, e.data FROM events e JOIN items i ON i.thread_id = e.thread_id
       WHERE i.id = $1 AND e.seq >= i.ord AND e.type = 'item.delta'
         AND CASE WHEN e.last_seq IS NULL THEN e.data::jsonb ELSE e.data::jsonb -> 0 END ->> 'itemId' = $1 ORDER BY e.seq`,
      [itemId],
    );
    return rows
      .flatMap(eventsOfRow)
      .map((event) => (event.data as { delta: string }).delta)
      .join("");
  }

  async hasApprovalRule(workspacePath: string, scopeKey: string): Promise<boolean> {
    const rows = await this.rows("SELECT 1 FROM approval_rules WHERE workspace_path = $1 AND scope_key = $2", [workspacePath, scopeKey]);
    return rows.length > 0;
  }

  async rebuild(): Promise<void> {
    await this.flush();
    await this.transaction(async (client) => {
      await client.query("DELETE FROM items; DELETE FROM turns; DELETE FROM threads; DELETE FROM approval_rules;");
      // In feed order: a thread's events are in it in seq order (a later commit of a thread
      // starts, so takes its xid, after the earlier one ended).
      for (let after = { xid: "0", gid: 0 }; ;) {
        const { rows } = await client.query<EventRow & { xid: string; gid: number }>(
          `SELECT xid::text AS xid, gid, ${EVENT_COLUMNS} FROM events
           WHERE (events.xid, gid) > ($1::xid8, $2) AND type <> 'item.delta' ORDER BY events.xid, gid LIMIT 1000`,
          [after.xid, after.gid],
        );
        const last = rows.at(-1);
        if (!last) break;
        await client.query("SELECT switchyard_project($1::jsonb)", [JSON.stringify(rows.flatMap((row) => projectEvent(toEvent(row))))]);
        after = { xid: last.xid, gid: last.gid };
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    try {
      await this.flush();
    } catch (error) {
      this.onError(new Error(`${this.pending.length} events could not be written before shutdown: ${String(error)}`));
    } finally {
      this.closed = true;
      this.answerCommitWaiters(() => true);
      await Promise.all([this.feed.idle(), this.commands.idle(), this.broadcasts.idle()]);
      await this.node.leave();
      await Promise.all([this.pool.end(), this.logPool.end()]);
    }
  }
}

function notOwner(threadId: string): RuntimeError {
  return new RuntimeError("notOwner", `Thread ${threadId} is written by another node of the cluster; retry.`, { threadId });
}
