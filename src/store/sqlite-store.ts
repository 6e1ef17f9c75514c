// The SQLite store. The `events` table is the append-only log and the source of truth;
// threads, turns, items and approval_rules are projections of it, always rebuildable by
// replaying the log through `applyEvent`.
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { RuntimeError } from "../domain/errors.js";
import type { DeltaKind, EventType, NewEvent, RuntimeEvent } from "../domain/events.js";
import type { ItemType, Item, Thread, TokenUsage, Turn } from "../domain/model.js";
import {
  type EventCursor,
  LogConflictError,
  type LogRecord,
  type Store,
  type StorageStatus,
  type TurnItemsJson,
  type ThreadFilter,
  type ThreadPage,
} from "./store.js";
import { BLOBS_SCHEMA, BlobStore, hydrated } from "./blobs.js";
import { projectEvent, type ThreadColumn } from "./projection.js";
import { FACE_STATE_SCHEMA, SqliteFaceState } from "./sqlite-face-state.js";
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
  type ItemParams,
  type ThreadRow,
  type TurnRow,
} from "./rows.js";

export const DB_FILE = "switchyard.db";

// ---------------------------------------------------------------------------------------------
// Schema and migrations. `PRAGMA user_version` is the number of migrations applied; a later
// version appends a step to MIGRATIONS and never edits an earlier one.

const SCHEMA_V1 = `
CREATE TABLE events (
  seq       INTEGER PRIMARY KEY,
  thread_id TEXT NOT NULL,
  type      TEXT NOT NULL,
  ts        TEXT NOT NULL,
  data      TEXT NOT NULL
);
CREATE INDEX events_thread_seq ON events(thread_id, seq);

CREATE TABLE threads (
  id              TEXT PRIMARY KEY,
  workspace_path  TEXT NOT NULL,
  user_id         TEXT,
  origin_channel  TEXT NOT NULL,
  channel_context TEXT,
  display_name    TEXT,
  status          TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  last_active_at  TEXT NOT NULL,
  history_mode    TEXT NOT NULL,
  mode            TEXT NOT NULL,
  configuration   TEXT,
  metadata        TEXT NOT NULL,
  queued_inputs   TEXT NOT NULL,
  plan            TEXT,
  forked_from     TEXT
);
-- Listing is ordered by (last_active_at, id) descending; one index per common filter keeps
-- "filter + order + limit" an index range scan instead of a sort.
CREATE INDEX threads_recent    ON threads(last_active_at, id);
CREATE INDEX threads_user      ON threads(user_id, last_active_at, id);
CREATE INDEX threads_workspace ON threads(workspace_path, last_active_at, id);
CREATE INDEX threads_channel   ON threads(origin_channel, last_active_at, id);
CREATE INDEX threads_status    ON threads(status, last_active_at, id);

CREATE TABLE turns (
  id            TEXT PRIMARY KEY,
  thread_id     TEXT NOT NULL,
  seq           INTEGER NOT NULL, -- seq of turn.started: the turn's order within its thread
  status        TEXT NOT NULL,
  started_at    TEXT NOT NULL,
  completed_at  TEXT,
  token_usage   TEXT,
  error         TEXT,
  cancel_reason TEXT,
  input         TEXT NOT NULL,
  model         TEXT,
  diff          TEXT
);
CREATE INDEX turns_thread ON turns(thread_id, seq);
CREATE INDEX turns_unfinished ON turns(seq) WHERE status IN ('running', 'waitingApproval');

-- The whole Item is one JSON column: reading 20,000 items as one string each plus JSON.parse
-- is ~1.5x faster than assembling them from columns (fewer values crossing into JS).
CREATE TABLE items (
  id        TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  turn_id   TEXT NOT NULL,
  ord       INTEGER NOT NULL, -- seq of the event that created the row: creation order
  data      TEXT NOT NULL
);
CREATE INDEX items_turn   ON items(turn_id, ord);
CREATE INDEX items_thread ON items(thread_id, ord);

CREATE TABLE approval_rules (
  workspace_path TEXT NOT NULL,
  scope_key      TEXT NOT NULL,
  PRIMARY KEY (workspace_path, scope_key)
) WITHOUT ROWID;
`;

// v2: items carry their type in a column, so reads can route stored JSON without parsing it.
const SCHEMA_V2 = `
ALTER TABLE items ADD COLUMN type TEXT NOT NULL DEFAULT '';
UPDATE items SET type = json_extract(data, '$.type');
`;

// v5: logs a face keeps beside the threads (an AgentCompany run's events): not a projection.
// One chain per log: a prev_hash is followed once.
const FACE_LOGS_SCHEMA = `
CREATE TABLE face_logs (
  log       TEXT    NOT NULL,
  seq       INTEGER NOT NULL,
  prev_hash TEXT,
  hash      TEXT    NOT NULL,
  body      TEXT    NOT NULL,
  PRIMARY KEY (log, seq),
  UNIQUE (log, prev_hash)
) WITHOUT ROWID;
`;

// v3: threads remember the external agent session their backend continues.
const SCHEMA_V3 = `ALTER TABLE threads ADD COLUMN backend_session TEXT;`;

const MIGRATIONS: ReadonlyArray<(db: Database.Database) => void> = [
  (db) => db.exec(SCHEMA_V1),
  (db) => db.exec(SCHEMA_V2),
  (db) => db.exec(SCHEMA_V3),
  (db) => db.exec(BLOBS_SCHEMA), // v4: large inline images, once each (blobs.ts)
  (db) => db.exec(FACE_LOGS_SCHEMA), // v5: logs faces keep beside the threads
  (db) => db.exec(FACE_STATE_SCHEMA), // v6: records, queues faces share (sqlite-face-state.ts)
];

function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`${DB_FILE} has schema version ${current}, newer than this Switchyard supports (${MIGRATIONS.length})`);
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    const step = MIGRATIONS[version]!;
    db.transaction(() => {
      step(db);
      db.pragma(`user_version = ${version + 1}`);
    }).immediate();
  }
}

const THREAD_COLS = THREAD_COLUMNS;
// What reads select: the columns that may hold user input (so images) with blob references resolved.
const THREAD_READ = THREAD_COLS.replace("queued_inputs", `${hydrated("queued_inputs")} AS queued_inputs`);
const TURN_COLS = `id, thread_id, status, started_at, completed_at, token_usage, error, ${hydrated("input")} AS input, model, cancel_reason, diff`;
const ITEM_DATA = hydrated("data");

// ---------------------------------------------------------------------------------------------

interface PendingEvent {
  seq: number;
  threadId: string;
  type: EventType;
  ts: string;
  /** Serialized at append time: the log holds what was appended, even if the caller later mutates `data`. */
  data: string;
  /** The event as returned by append(), handed to commit listeners. */
  event: RuntimeEvent;
}

export interface SqliteStoreOptions {
  /** Errors of background flushes and of single projections (the log itself was still written). */
  onError?: (err: unknown) => void;
}

/** Commit retries while the disk refuses writes: the first after this long, then doubling up to the max. */
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 5_000;
/** Events (serialized) held while they cannot be committed; past it, appends are refused. */
const MAX_PENDING_BYTES = 64 * 1024 * 1024;

/** The error code of a failure to write the data directory (disk full, I/O), else undefined. */
function storageFailureCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return undefined;
  if (code === "SQLITE_FULL" || code.startsWith("SQLITE_IOERR") || code === "SQLITE_CANTOPEN") return code;
  if (code === "ENOSPC" || code === "EDQUOT" || code === "EIO" || code === "EROFS") return code;
  return undefined;
}

function isStorageUnavailable(err: unknown): boolean {
  return err instanceof RuntimeError && err.code === "storageUnavailable";
}

/** Non-delta events read per page by rebuild(); better-sqlite3 can't write while a statement iterates. */
const REPLAY_PAGE = 1000;

function defaultOnError(err: unknown): void {
  process.stderr.write(`switchyard store: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
}

function prepareStatements(db: Database.Database) {
  const existsThread = "WHERE EXISTS (SELECT 1 FROM threads WHERE id = @thread_id)";
  return {
    maxSeq: db.prepare<[], number | null>("SELECT MAX(seq) FROM events").pluck(),
    insertEvent: db.prepare<[number, string, string, string, string]>(
      "INSERT INTO events (seq, thread_id, type, ts, data) VALUES (?, ?, ?, ?, ?)",
    ),

    // Projections.
    insertThread: db.prepare<[Record<string, string | null>]>(
      `INSERT OR REPLACE INTO threads (${THREAD_COLS}) VALUES (@id, @workspace_path, @user_id, @origin_channel,
       @channel_context, @display_name, @status, @created_at, @last_active_at, @history_mode, @mode,
       @configuration, @metadata, @queued_inputs, @plan, @forked_from, @backend_session)`,
    ),
    bumpLastActive: db.prepare<[string, string]>("UPDATE threads SET last_active_at = max(last_active_at, ?) WHERE id = ?"),
    deleteThreadItems: db.prepare<[string]>("DELETE FROM items WHERE thread_id = ?"),
    deleteThreadTurns: db.prepare<[string]>("DELETE FROM turns WHERE thread_id = ?"),
    deleteThread: db.prepare<[string]>("DELETE FROM threads WHERE id = ?"),
    // Rows for a deleted (or unknown) thread are not created: late events of a turn that was
    // running when its thread was deleted would otherwise leave orphans.
    insertTurn: db.prepare<[Record<string, string | number | null>]>(
      `INSERT OR IGNORE INTO turns (id, thread_id, seq, status, started_at, completed_at, token_usage, error, input, model)
       SELECT @id, @thread_id, @seq, @status, @started_at, @completed_at, @token_usage, @error, @input, @model ${existsThread}`,
    ),
    finishTurn: db.prepare<[string, string, string | null, string | null, string | null, string]>(
      `UPDATE turns SET status = ?, completed_at = ?, token_usage = coalesce(?, token_usage), error = ?,
       cancel_reason = ? WHERE id = ?`,
    ),
    setTurnDiff: db.prepare<[string, string]>("UPDATE turns SET diff = ? WHERE id = ?"),
    setTurnUsage: db.prepare<[string, string]>("UPDATE turns SET token_usage = ? WHERE id = ?"),
    insertItem: db.prepare<[ItemParams]>(
      `INSERT OR IGNORE INTO items (id, thread_id, turn_id, ord, type, data)
       SELECT @id, @thread_id, @turn_id, @ord, @type, @data ${existsThread}`,
    ),
    upsertItem: db.prepare<[ItemParams]>(
      `INSERT INTO items (id, thread_id, turn_id, ord, type, data)
       SELECT @id, @thread_id, @turn_id, @ord, @type, @data ${existsThread}
       ON CONFLICT(id) DO UPDATE SET data = excluded.data`,
    ),
    insertRule: db.prepare<[string, string]>("INSERT OR IGNORE INTO approval_rules (workspace_path, scope_key) VALUES (?, ?)"),

    // Reads.
    getThread: db.prepare<[string], ThreadRow>(`SELECT ${THREAD_READ} FROM threads WHERE id = ?`),
    turnsOfThread: db.prepare<[string], TurnRow>(`SELECT ${TURN_COLS} FROM turns WHERE thread_id = ? ORDER BY seq`),
    getTurn: db.prepare<[string], TurnRow>(`SELECT ${TURN_COLS} FROM turns WHERE id = ?`),
    unfinishedTurns: db.prepare<[], TurnRow>(`SELECT ${TURN_COLS} FROM turns WHERE status IN ('running', 'waitingApproval') ORDER BY seq`),
    // One JSON array parameter for any number of threads; the IN list still uses turns_thread.
    turnUsages: db.prepare<[string], { thread_id: string; token_usage: string }>(
      `SELECT thread_id, token_usage FROM turns WHERE thread_id IN (SELECT value FROM json_each(?))
       AND token_usage IS NOT NULL ORDER BY thread_id, seq`,
    ),
    itemsOfTurn: db.prepare<[string], string>(`SELECT ${ITEM_DATA} FROM items WHERE turn_id = ? ORDER BY ord`).pluck(),
    itemsOfThread: db.prepare<[string], string>(`SELECT ${ITEM_DATA} FROM items WHERE thread_id = ? ORDER BY ord`).pluck(),
    // Turn by turn, on items_turn: a GROUP BY over the thread's items sorted all of them (their
    // data included) in a temporary b-tree, which cost more than it saved.
    itemsJsonByTurn: db
      .prepare<[omit: string, threadId: string], [string, string | null]>(
        `SELECT t.id, (SELECT '[' || group_concat(${ITEM_DATA}, ',' ORDER BY ord) || ']' FROM items
           WHERE turn_id = t.id AND type NOT IN (SELECT value FROM json_each(?)))
         FROM turns t WHERE t.thread_id = ? ORDER BY t.seq`,
      )
      .raw(),
    eventsAfter: db.prepare<[string, number, number], EventRow>(
      `SELECT seq, thread_id, type, ts, ${hydrated("data")} AS data FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    ),
    lastSeq: db.prepare<[string], { seq: number }>("SELECT MAX(seq) AS seq FROM events WHERE thread_id = ?"),
    hasRule: db.prepare<[string, string], number>("SELECT 1 FROM approval_rules WHERE workspace_path = ? AND scope_key = ?").pluck(),
    appendLog: db.prepare<[string, number, string | null, string, string]>(
      "INSERT INTO face_logs (log, seq, prev_hash, hash, body) VALUES (?, ?, ?, ?, ?)",
    ),
    readLog: db.prepare<[string, number], LogRecord>(
      "SELECT seq, prev_hash AS prevHash, hash, body FROM face_logs WHERE log = ? AND seq > ? ORDER BY seq",
    ),
    replayPage: db.prepare<[number, number], EventRow>(
      `SELECT seq, thread_id, type, ts, ${hydrated("data")} AS data FROM events WHERE seq > ? AND type <> 'item.delta'
       ORDER BY seq LIMIT ?`,
    ),
    // deltasOf: scan the thread's events from the start of the item's turn (events_thread_seq),
    // so only the tail of one thread is read. The fallback (item unknown) scans the whole log.
    deltaAnchor: db.prepare<[string], { thread_id: string; seq: number }>(
      `SELECT i.thread_id, coalesce(t.seq, i.ord) AS seq FROM items i LEFT JOIN turns t ON t.id = i.turn_id
       WHERE i.id = ?`,
    ),
    deltasInThread: db
      .prepare<[string, number, string], string>(
        `SELECT data FROM events WHERE thread_id = ? AND seq >= ? AND type = 'item.delta'
       AND json_extract(data, '$.itemId') = ? ORDER BY seq`,
      )
      .pluck(),
    deltasAnywhere: db
      .prepare<[string], string>(`SELECT data FROM events WHERE type = 'item.delta' AND json_extract(data, '$.itemId') = ? ORDER BY seq`)
      .pluck(),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

export class SqliteStore implements Store {
  readonly shared = false;
  readonly faceState: SqliteFaceState;
  private readonly db: Database.Database;
  private readonly onError: (err: unknown) => void;
  private readonly stmts: Statements;
  private readonly blobs: BlobStore;
  private readonly listStmts = new Map<string, Database.Statement<unknown[], ThreadRow>>();
  private readonly threadSetters = new Map<ThreadColumn, Database.Statement<[string | null, string]>>();
  private readonly writeBatch: Database.Transaction<(batch: PendingEvent[]) => unknown[]>;
  private seq: number;
  private pending: PendingEvent[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private readonly commitListeners: Array<(events: RuntimeEvent[]) => void> = [];
  private closed = false;
  private storage: StorageStatus = { available: true };
  private readonly statusListeners: Array<(status: StorageStatus) => void> = [];
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_MS;
  /** Serialized size of the pending events, bounded while they cannot be committed. */
  private pendingBytes = 0;

  constructor(file: string, opts: SqliteStoreOptions = {}) {
    this.onError = opts.onError ?? defaultOnError;
    const db = new Database(file);
    this.db = db;
    try {
      db.pragma("journal_mode = WAL");
      // NORMAL in WAL mode: a process crash loses nothing committed; only an OS crash can lose
      // the last transactions, which is the usual trade for not fsyncing every commit.
      db.pragma("synchronous = NORMAL");
      db.pragma("busy_timeout = 5000");
      // better-sqlite3 builds SQLite with a 16 MiB page cache; the operating system caches the
      // file anyway, and 4 MiB keeps a long turn's appends from growing the heap by 12 MiB more.
      db.pragma("cache_size = -4096");
      // Off on purpose: projections guard themselves, and a constraint must never reject the log.
      db.pragma("foreign_keys = OFF");
      // No ANALYZE / PRAGMA optimize: stats taken while tables are tiny would mislead the planner
      // once they grow; the indexes below are chosen well without statistics.
      migrate(db);
    } catch (err) {
      db.close();
      throw err;
    }
    // Before the statements: they call its SQL function.
    this.blobs = new BlobStore(db, db.memory ? undefined : file);
    this.stmts = prepareStatements(db);
    this.faceState = new SqliteFaceState(db);
    this.seq = this.stmts.maxSeq.get() ?? 0;
    this.writeBatch = db.transaction((batch: PendingEvent[]) => {
      const errors: unknown[] = [];
      for (const e of batch) {
        this.stmts.insertEvent.run(e.seq, e.threadId, e.type, e.ts, this.blobs.dehydrate(e.data));
        // Deltas (~2,000 per turn) only go to the log; items get their text from item.completed.
        if (e.type !== "item.delta") {
          this.applySafely(
            { seq: e.seq, threadId: e.threadId, type: e.type, ts: e.ts, data: parse<unknown>(e.data) } as RuntimeEvent,
            errors,
          );
        }
      }
      return errors;
    });
  }

  // -------------------------------------------------------------------------------------------
  // Writing

  append<T extends EventType>(event: NewEvent<T>): Extract<RuntimeEvent, { type: T }> {
    if (this.closed) throw new Error("Store is closed");
    const data = JSON.stringify(event.data); // first: if it throws, no seq is consumed
    if (!this.storage.available && this.pendingBytes + data.length > MAX_PENDING_BYTES) {
      throw new RuntimeError(
        "storageUnavailable",
        `${this.storage.message} ${MAX_PENDING_BYTES / 1024 / 1024} MiB of events are waiting to be written.`,
        {
          cause: this.storage.cause,
        },
      );
    }
    this.pendingBytes += data.length;
    const stored = { type: event.type, threadId: event.threadId, data: event.data, seq: ++this.seq, ts: new Date().toISOString() };
    this.pending.push({
      seq: stored.seq,
      threadId: stored.threadId,
      type: stored.type,
      ts: stored.ts,
      data,
      event: stored as RuntimeEvent,
    });
    // While the disk refuses writes, the retry timer commits; appends only wait.
    if (this.storage.available) {
      this.scheduled ??= setImmediate(() => {
        this.scheduled = undefined;
        try {
          this.commit();
        } catch (err) {
          // The batch stays pending; the next append or read, or the retry timer, retries it.
          if (!isStorageUnavailable(err)) this.onError(err);
        }
      });
    }
    return stored as unknown as Extract<RuntimeEvent, { type: T }>; // TS can't correlate T across the union
  }

  async flush(): Promise<void> {
    this.commit();
  }

  committed(): Promise<boolean> {
    return Promise.resolve(true);
  }

  stillOwns(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Commits the pending batch now, in one transaction; throws when the disk refuses it. */
  private commit(): void {
    if (this.scheduled !== undefined) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    let errors: unknown[];
    try {
      errors = this.writeBatch.immediate(batch);
    } catch (err) {
      // Nothing was committed: put the batch back in front so seq order is preserved.
      this.pending = batch.concat(this.pending);
      const cause = storageFailureCode(err);
      if (cause === undefined) throw err;
      throw this.storageFailed(cause, err);
    }
    this.pendingBytes = this.pending.reduce((n, e) => n + e.data.length, 0);
    if (!this.storage.available) this.setStorage({ available: true });
    for (const err of errors) this.onError(err);
    for (const listener of this.commitListeners) listener(batch.map((e) => e.event));
  }

  onCommit(listener: (events: RuntimeEvent[]) => void): void {
    this.commitListeners.push(listener);
  }

  storageStatus(): StorageStatus {
    return this.storage;
  }

  /** One process writes every event: it reports all of them. */
  follow(): () => void {
    return () => undefined;
  }

  /** One process owns the data directory (its lock file), so it owns every thread. */
  acquire(): Promise<boolean> {
    return Promise.resolve(true);
  }

  onLost(): void {}

  onOrphans(): void {}

  /** One process: no other to take a turn over. */
  peersAlive(): Promise<boolean> {
    return Promise.resolve(false);
  }

  handOver(): void {}

  forward(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  onCommand(): void {}

  release(): Promise<void> {
    return Promise.resolve();
  }

  /** One process: nobody else to run a waiting turn. */
  offerTurn(): Promise<void> {
    return Promise.resolve();
  }

  withdrawTurn(): Promise<boolean> {
    return Promise.resolve(true);
  }

  takeOfferedTurn(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  onTurnOffered(): void {}

  appendToLog(log: string, records: LogRecord[]): Promise<void> {
    try {
      this.db.transaction(() => {
        for (const r of records) this.stmts.appendLog.run(log, r.seq, r.prevHash, r.hash, r.body);
      })();
      return Promise.resolve();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      return Promise.reject(
        code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE" ? new LogConflictError(log) : error,
      );
    }
  }

  readLog(log: string, afterSeq = 0): Promise<LogRecord[]> {
    return Promise.resolve(this.stmts.readLog.all(log, afterSeq));
  }

  onStorageStatus(listener: (status: StorageStatus) => void): void {
    this.statusListeners.push(listener);
  }

  /** Reads see pending events too, once committed; while the disk refuses, what was committed. */
  private flushForRead(): void {
    if (!this.storage.available) return;
    try {
      this.commit();
    } catch (err) {
      if (!isStorageUnavailable(err)) throw err;
    }
  }

  /** The disk refused a commit: say so (once), retry on a timer, and give the caller a clear error. */
  private storageFailed(cause: string, err: unknown): RuntimeError {
    if (this.storage.available) {
      const detail = err instanceof Error ? err.message : String(err);
      this.setStorage({
        available: false,
        cause,
        message: `The data directory cannot be written (${cause}: ${detail}). Reads still work; writes resume once it can be written again.`,
        since: new Date().toISOString(),
      });
    }
    this.retryLater();
    const storage = this.storage as Extract<StorageStatus, { available: false }>;
    return new RuntimeError("storageUnavailable", storage.message, { cause });
  }

  private retryLater(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      try {
        this.commit();
        this.retryDelayMs = RETRY_FIRST_MS;
      } catch (err) {
        if (!isStorageUnavailable(err)) this.onError(err);
        this.retryDelayMs = Math.min(this.retryDelayMs * 2, RETRY_MAX_MS);
        this.retryLater();
      }
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }

  private setStorage(status: StorageStatus): void {
    this.storage = status;
    for (const listener of this.statusListeners) listener(status);
  }

  /**
   * Applies a projection error-isolated: a failing projection is reported, but must not roll
   * back the log write (`rebuild()` can repair projections; lost events can't be recovered).
   * Errors that ended the transaction itself are rethrown.
   */
  private applySafely(event: RuntimeEvent, errors: unknown[]): void {
    try {
      this.applyEvent(event);
    } catch (err) {
      if (!this.db.inTransaction) throw err;
      errors.push(new Error(`projection of event ${event.seq} (${event.type}) failed`, { cause: err }));
    }
  }

  /** Applies one event to the derived tables. Used by flush() and by rebuild(). */
  private applyEvent(e: RuntimeEvent): void {
    const s = this.stmts;
    // Columns that may hold user input (so images) keep large data URLs in the blob table.
    const dehydrate = (json: string): string => this.blobs.dehydrate(json);
    for (const write of projectEvent(e)) {
      switch (write.op) {
        case "insertThread":
          s.insertThread.run({ ...write.row, queued_inputs: dehydrate(write.row.queued_inputs) });
          break;
        case "setThread": {
          const value = write.column === "queued_inputs" && write.value !== null ? dehydrate(write.value) : write.value;
          this.threadSetter(write.column).run(value, write.threadId);
          break;
        }
        case "touchThread":
          s.bumpLastActive.run(write.at, write.threadId);
          break;
        case "deleteThread":
          s.deleteThreadItems.run(write.threadId);
          s.deleteThreadTurns.run(write.threadId);
          s.deleteThread.run(write.threadId);
          break;
        case "insertTurn":
          s.insertTurn.run({ ...write.row, input: dehydrate(write.row.input) });
          break;
        case "finishTurn":
          s.finishTurn.run(write.status, write.completedAt, write.tokenUsage, write.error, write.cancelReason, write.turnId);
          break;
        case "setTurn":
          (write.column === "diff" ? s.setTurnDiff : s.setTurnUsage).run(write.value, write.turnId);
          break;
        case "putItem":
          (write.replace ? s.upsertItem : s.insertItem).run({ ...write.row, data: dehydrate(write.row.data) });
          break;
        case "insertRule":
          s.insertRule.run(write.workspacePath, write.scopeKey);
          break;
      }
    }
  }

  private threadSetter(column: ThreadColumn): Database.Statement<[string | null, string]> {
    let stmt = this.threadSetters.get(column);
    if (!stmt) this.threadSetters.set(column, (stmt = this.db.prepare(`UPDATE threads SET ${column} = ? WHERE id = ?`)));
    return stmt;
  }

  // -------------------------------------------------------------------------------------------
  // Reading. Every read flushes first so it sees every append (when the disk lets it).

  async getThread(threadId: string): Promise<Thread | undefined> {
    this.flushForRead();
    const row = this.stmts.getThread.get(threadId);
    return row && toThread(row);
  }

  async listThreads(filter: ThreadFilter, opts: { limit: number; cursor?: string }): Promise<ThreadPage> {
    this.flushForRead();
    const limit = Math.min(Math.max(1, Math.floor(opts.limit) || 1), 1_000_000); // NaN -> 1, Infinity -> cap
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (column: string, value: string | undefined): void => {
      if (value === undefined) return;
      where.push(`${column} = ?`);
      params.push(value);
    };
    add("user_id", filter.userId);
    add("origin_channel", filter.originChannel);
    add("workspace_path", filter.workspacePath);
    add("channel_context", filter.channelContext);
    add("status", filter.status);
    if (filter.hideArchived) where.push("status <> 'archived'");
    if (opts.cursor !== undefined) {
      // Row-value comparison: SQLite turns it into an index range scan (keyset pagination).
      where.push("(last_active_at, id) < (?, ?)");
      params.push(...decodeCursor(opts.cursor));
    }
    params.push(limit + 1); // one extra row tells whether there is a next page
    const sql =
      `SELECT ${THREAD_READ} FROM threads` +
      (where.length > 0 ? ` WHERE ${where.join(" AND ")}` : "") +
      " ORDER BY last_active_at DESC, id DESC LIMIT ?";
    let stmt = this.listStmts.get(sql); // at most 64 filter shapes
    if (stmt === undefined) {
      stmt = this.db.prepare<unknown[], ThreadRow>(sql);
      this.listStmts.set(sql, stmt);
    }
    const rows = stmt.all(...params);
    const page: ThreadPage = { threads: rows.slice(0, limit).map(toThread) };
    if (rows.length > limit) {
      const last = rows[limit - 1]!;
      page.nextCursor = encodeCursor(last.last_active_at, last.id);
    }
    return page;
  }

  async listTurns(threadId: string, opts: { withItems: boolean; committedBefore?: number }): Promise<Turn[]> {
    this.flushForRead();
    const turns = this.stmts.turnsOfThread.all(threadId).map(toTurn);
    if (!opts.withItems) return turns;
    // One query for all items of the thread, grouped by turn.
    const byTurn = new Map<string, Item[]>();
    for (const turn of turns) {
      turn.items = [];
      byTurn.set(turn.id, turn.items);
    }
    for (const data of this.stmts.itemsOfThread.all(threadId)) {
      const item = toItem(data);
      byTurn.get(item.turnId)?.push(item);
    }
    return turns;
  }

  async itemsJsonByTurn(threadId: string, omit: readonly ItemType[] = []): Promise<TurnItemsJson[]> {
    this.flushForRead();
    return this.stmts.itemsJsonByTurn
      .all(JSON.stringify(omit), threadId)
      .flatMap(([turnId, json]) => (json === null ? [] : [{ turnId, json }]));
  }

  async getTurn(turnId: string, opts: { withItems?: boolean } = {}): Promise<Turn | undefined> {
    this.flushForRead();
    const row = this.stmts.getTurn.get(turnId);
    if (row === undefined) return undefined;
    const turn = toTurn(row);
    if (opts.withItems !== false) turn.items = this.stmts.itemsOfTurn.all(turnId).map(toItem);
    return turn;
  }

  async listItems(turnId: string): Promise<Item[]> {
    this.flushForRead();
    return this.stmts.itemsOfTurn.all(turnId).map(toItem);
  }

  /** Unfinished turns, oldest first, without items (use listItems). */
  async listUnfinishedTurns(): Promise<Turn[]> {
    this.flushForRead();
    return this.stmts.unfinishedTurns.all().map(toTurn);
  }

  async turnUsages(threadIds: string[]): Promise<Array<{ threadId: string; usage: TokenUsage }>> {
    if (threadIds.length === 0) return [];
    this.flushForRead();
    return this.stmts.turnUsages
      .all(JSON.stringify(threadIds))
      .map((r) => ({ threadId: r.thread_id, usage: parse<TokenUsage>(r.token_usage) }));
  }

  async eventsAfter(threadId: string, afterSeq: number, limit = 10_000): Promise<RuntimeEvent[]> {
    this.flushForRead();
    return this.stmts.eventsAfter.all(threadId, afterSeq, limit).map(toEvent);
  }

  async eventsAfterEach(cursors: readonly EventCursor[], limitEach: number): Promise<Map<string, RuntimeEvent[]>> {
    this.flushForRead();
    // A local read per thread costs microseconds: one query for all buys nothing here.
    return new Map(
      cursors.map(({ threadId, afterSeq }) => [threadId, this.stmts.eventsAfter.all(threadId, afterSeq, limitEach).map(toEvent)]),
    );
  }

  async lastSeq(threadId: string): Promise<number> {
    // Events waiting for the disk count too: they have their seq.
    for (let i = this.pending.length - 1; i >= 0; i--) if (this.pending[i]!.threadId === threadId) return this.pending[i]!.seq;
    return this.stmts.lastSeq.get(threadId)?.seq ?? 0;
  }

  async hasApprovalRule(workspacePath: string, scopeKey: string): Promise<boolean> {
    this.flushForRead();
    return this.stmts.hasRule.get(workspacePath, scopeKey) !== undefined;
  }

  /**
   * The concatenated text of an item's delta events, oldest first (optionally of one kind):
   * the partial text of an item that was streaming when the process died.
   */
  async deltasOf(itemId: string, kind?: DeltaKind): Promise<string> {
    this.flushForRead();
    const anchor = this.stmts.deltaAnchor.get(itemId);
    const rows = anchor ? this.stmts.deltasInThread.all(anchor.thread_id, anchor.seq, itemId) : this.stmts.deltasAnywhere.all(itemId);
    let text = "";
    for (const row of rows) {
      const d = parse<{ kind: DeltaKind; delta: string }>(row);
      if (kind === undefined || d.kind === kind) text += d.delta;
    }
    return text;
  }

  async rebuild(): Promise<void> {
    this.commit();
    const errors: unknown[] = [];
    this.db
      .transaction(() => {
        this.db.exec("DELETE FROM items; DELETE FROM turns; DELETE FROM threads; DELETE FROM approval_rules;");
        // Keyset pages rather than one iterator: better-sqlite3 forbids writes while a statement
        // iterates. Either way only one page of events is in memory at a time.
        for (let after = 0; ;) {
          const rows = this.stmts.replayPage.all(after, REPLAY_PAGE);
          if (rows.length === 0) break;
          for (const row of rows) this.applySafely(toEvent(row), errors);
          after = rows[rows.length - 1]!.seq;
        }
      })
      .immediate();
    for (const err of errors) this.onError(err);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    try {
      this.commit();
    } catch (err) {
      if (!isStorageUnavailable(err)) throw err;
      // Shutting down with the disk still full: what it refused is lost, the log stays consistent.
      this.onError(new Error(`${this.pending.length} events could not be written before shutdown: ${(err as Error).message}`));
    } finally {
      this.closed = true;
      this.blobs.close();
      this.db.close();
    }
  }
}

/** Opens (creating if needed) `switchyard.db` in dataDir. */
export function openStore(dataDir: string, opts: SqliteStoreOptions = {}): SqliteStore {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return new SqliteStore(path.join(dataDir, DB_FILE), opts);
}
