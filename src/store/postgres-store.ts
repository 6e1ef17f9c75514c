// The PostgreSQL store: the same log and derived tables as the SQLite store, for several
// Switchyard nodes on one database. `events` is keyed (thread_id, seq), seq contiguous per
// thread from 1; `gid` (an identity) and `xid` (the writing transaction) order the global feed.
// Appends are synchronous: the thread's writer assigns seq from the head it holds in memory and
// commits the batch on the next tick, events and projections in one transaction.
import type { Pool, PoolClient } from "pg";
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
import type { StorageStatus, Store, StoredItemJson, ThreadFilter, ThreadPage } from "./store.js";

// ---------------------------------------------------------------------------------------------
// Schema. `switchyard_schema.version` is the number of migrations applied; a later version
// appends a step and never edits an earlier one.

const MIGRATIONS: readonly string[] = [
  `
CREATE TABLE events (
  thread_id TEXT   NOT NULL,
  seq       BIGINT NOT NULL,
  gid       BIGINT GENERATED ALWAYS AS IDENTITY,
  xid       XID8   NOT NULL DEFAULT pg_current_xact_id(),
  type      TEXT   NOT NULL,
  ts        TEXT   NOT NULL,
  data      TEXT   NOT NULL,
  PRIMARY KEY (thread_id, seq)
);
CREATE INDEX events_gid ON events(gid);

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
  forked_from     TEXT,
  backend_session TEXT
);
CREATE INDEX threads_recent    ON threads(last_active_at, id);
CREATE INDEX threads_user      ON threads(user_id, last_active_at, id);
CREATE INDEX threads_workspace ON threads(workspace_path, last_active_at, id);
CREATE INDEX threads_channel   ON threads(origin_channel, last_active_at, id);
CREATE INDEX threads_status    ON threads(status, last_active_at, id);

CREATE TABLE turns (
  id            TEXT PRIMARY KEY,
  thread_id     TEXT   NOT NULL,
  seq           BIGINT NOT NULL,
  status        TEXT   NOT NULL,
  started_at    TEXT   NOT NULL,
  completed_at  TEXT,
  token_usage   TEXT,
  error         TEXT,
  cancel_reason TEXT,
  input         TEXT   NOT NULL,
  model         TEXT,
  diff          TEXT
);
CREATE INDEX turns_thread ON turns(thread_id, seq);
CREATE INDEX turns_unfinished ON turns(seq) WHERE status IN ('running', 'waitingApproval');

CREATE TABLE items (
  id        TEXT PRIMARY KEY,
  thread_id TEXT   NOT NULL,
  turn_id   TEXT   NOT NULL,
  ord       BIGINT NOT NULL,
  type      TEXT   NOT NULL,
  data      TEXT   NOT NULL
);
CREATE INDEX items_turn   ON items(turn_id, ord);
CREATE INDEX items_thread ON items(thread_id, ord);

CREATE TABLE approval_rules (
  workspace_path TEXT NOT NULL,
  scope_key      TEXT NOT NULL,
  PRIMARY KEY (workspace_path, scope_key)
);
`,
];

/** The schema version this binary writes. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** Any two processes migrating at once take turns on this advisory lock. */
const MIGRATION_LOCK = 0x5377_7964; // "Swyd"

/** Applies the migrations this database lacks; refuses one newer than this binary. Returns the version. */
export async function migratePostgres(pool: Pool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS switchyard_schema (version INTEGER NOT NULL)");
    const { rows } = await client.query<{ version: number }>("SELECT version FROM switchyard_schema");
    const current = rows[0]?.version ?? 0;
    if (current > MIGRATIONS.length) {
      throw new Error(`The database has Switchyard schema version ${current}, newer than this Switchyard supports (${MIGRATIONS.length}).`);
    }
    for (let version = current; version < MIGRATIONS.length; version++) await client.query(MIGRATIONS[version]!);
    if (rows.length === 0) await client.query("INSERT INTO switchyard_schema (version) VALUES ($1)", [MIGRATIONS.length]);
    else await client.query("UPDATE switchyard_schema SET version = $1", [MIGRATIONS.length]);
    await client.query("COMMIT");
    return MIGRATIONS.length;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** A pool whose BIGINT columns read as numbers (seq, gid stay far below 2^53). */
export async function postgresPool(url: string): Promise<Pool> {
  const pg = (await import("pg")).default;
  return new pg.Pool({
    connectionString: url,
    max: 4,
    keepAlive: true,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") => (oid === 20 ? Number : pg.types.getTypeParser(oid, format))) as never,
    },
  });
}

// ---------------------------------------------------------------------------------------------

const THREAD_SELECT = `SELECT ${THREAD_COLUMNS} FROM threads`;
const TURN_COLUMNS = "id, thread_id, status, started_at, completed_at, token_usage, error, input, model, cancel_reason, diff";
const EVENT_COLUMNS = "seq, thread_id, type, ts, data";

interface PendingEvent {
  event: RuntimeEvent;
  /** Serialized at append time: the log holds what was appended, even if the caller later mutates `data`. */
  data: string;
}

export interface PostgresStoreOptions {
  /** Errors of background flushes. */
  onError?: (err: unknown) => void;
}

/** Commit retries while the database is unreachable: the first after this long, then doubling up to the max. */
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 5_000;
/** Events (serialized) held while they cannot be committed; past it, appends are refused. */
const MAX_PENDING_BYTES = 64 * 1024 * 1024;

export class PostgresStore implements Store {
  private pending: PendingEvent[] = [];
  private pendingBytes = 0;
  private scheduled: NodeJS.Immediate | undefined;
  /** The commit in progress; the next waits for it, so batches commit in append order. */
  private committing: Promise<void> = Promise.resolve();
  private readonly commitListeners: Array<(events: RuntimeEvent[]) => void> = [];
  private readonly statusListeners: Array<(status: StorageStatus) => void> = [];
  private storage: StorageStatus = { available: true };
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_MS;
  private closed = false;

  private constructor(
    private readonly pool: Pool,
    /** The seq of each thread's latest event appended. */
    private readonly heads: Map<string, number>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Connects, migrates, and loads each thread's head seq. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = await postgresPool(url);
    try {
      await migratePostgres(pool);
      const { rows } = await pool.query<{ thread_id: string; seq: number }>(
        "SELECT thread_id, max(seq) AS seq FROM events GROUP BY thread_id",
      );
      const heads = new Map(rows.map((r) => [r.thread_id, r.seq]));
      const onError = opts.onError ?? ((err) => process.stderr.write(`switchyard store: ${String(err)}\n`));
      pool.on("error", (err) => onError(err)); // an idle client lost its connection: the pool replaces it
      return new PostgresStore(pool, heads, onError);
    } catch (error) {
      await pool.end();
      const where = new URL(url);
      where.password = where.password ? "***" : "";
      throw new Error(`Cannot open the PostgreSQL store at ${where.href}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
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
    const seq = (this.heads.get(event.threadId) ?? 0) + 1;
    this.heads.set(event.threadId, seq);
    const stored = { type: event.type, threadId: event.threadId, data: event.data, seq, ts: new Date().toISOString() } as RuntimeEvent;
    this.pending.push({ event: stored, data });
    this.pendingBytes += data.length;
    if (this.storage.available) this.scheduled ??= setImmediate(() => void this.flush().catch(() => undefined));
    return stored as Extract<RuntimeEvent, { type: T }>;
  }

  /** Commits what is pending; rejects (storageUnavailable) while the database cannot be written. */
  flush(): Promise<void> {
    if (this.scheduled) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    this.committing = this.committing.catch(() => undefined).then(() => this.commit());
    return this.committing;
  }

  private async commit(): Promise<void> {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    let client: PoolClient | undefined;
    try {
      client = await this.pool.connect();
      await client.query("BEGIN");
      await client.query(
        `INSERT INTO events (thread_id, seq, type, ts, data)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])`,
        [
          batch.map((p) => p.event.threadId),
          batch.map((p) => p.event.seq),
          batch.map((p) => p.event.type),
          batch.map((p) => p.event.ts),
          batch.map((p) => p.data),
        ],
      );
      for (const { event } of batch) for (const write of projectEvent(event)) await applyWrite(client, write);
      await client.query("COMMIT");
    } catch (error) {
      await client?.query("ROLLBACK").catch(() => undefined);
      // Nothing was committed: the batch goes back in front, so seq order is kept.
      this.pending = batch.concat(this.pending);
      throw this.unavailable(error);
    } finally {
      client?.release();
    }
    this.pendingBytes = this.pending.reduce((n, p) => n + p.data.length, 0);
    if (!this.storage.available) this.setStorage({ available: true });
    const events = batch.map((p) => p.event);
    for (const listener of this.commitListeners) listener(events);
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
  }

  storageStatus(): StorageStatus {
    return this.storage;
  }

  onStorageStatus(listener: (status: StorageStatus) => void): void {
    this.statusListeners.push(listener);
  }

  // -------------------------------------------------------------------------------------------
  // Reading. A read commits what is pending first so it sees every append (when it can).

  private async rows<R extends object>(sql: string, params: unknown[] = []): Promise<R[]> {
    if (this.storage.available) await this.flush().catch(() => undefined);
    return (await this.pool.query<R>(sql, params)).rows;
  }

  async getThread(threadId: string): Promise<Thread | undefined> {
    const [row] = await this.rows<ThreadRow>(`${THREAD_SELECT} WHERE id = $1`, [threadId]);
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

  async listTurns(threadId: string, opts: { withItems: boolean }): Promise<Turn[]> {
    const turns = (await this.rows<TurnRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE thread_id = $1 ORDER BY seq`, [threadId])).map(toTurn);
    if (!opts.withItems) return turns;
    const byTurn = new Map<string, Item[]>();
    for (const turn of turns) byTurn.set(turn.id, (turn.items = []));
    for (const { data } of await this.rows<{ data: string }>("SELECT data FROM items WHERE thread_id = $1 ORDER BY ord", [threadId])) {
      const item = toItem(data);
      byTurn.get(item.turnId)?.push(item);
    }
    return turns;
  }

  async listItemsJson(threadId: string): Promise<StoredItemJson[]> {
    const rows = await this.rows<{ turn_id: string; type: string; data: string }>(
      "SELECT turn_id, type, data FROM items WHERE thread_id = $1 ORDER BY ord",
      [threadId],
    );
    return rows.map((r) => ({ turnId: r.turn_id, type: r.type as ItemType, json: r.data }));
  }

  async getTurn(turnId: string): Promise<Turn | undefined> {
    const [row] = await this.rows<TurnRow>(`SELECT ${TURN_COLUMNS} FROM turns WHERE id = $1`, [turnId]);
    if (!row) return undefined;
    const turn = toTurn(row);
    turn.items = await this.listItems(turnId);
    return turn;
  }

  async listItems(turnId: string): Promise<Item[]> {
    return (await this.rows<{ data: string }>("SELECT data FROM items WHERE turn_id = $1 ORDER BY ord", [turnId])).map((r) =>
      toItem(r.data),
    );
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
    const sql = `SELECT ${EVENT_COLUMNS} FROM events WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`;
    return (await this.rows<EventRow>(sql, [threadId, afterSeq, limit])).map(toEvent);
  }

  async lastSeq(threadId: string): Promise<number> {
    return this.heads.get(threadId) ?? 0;
  }

  async deltasOf(itemId: string): Promise<string> {
    const rows = await this.rows<{ data: string }>(
      `SELECT e.data FROM events e JOIN items i ON i.thread_id = e.thread_id
       WHERE i.id = $1 AND e.seq >= i.ord AND e.type = 'item.delta' AND e.data::jsonb ->> 'itemId' = $1 ORDER BY e.seq`,
      [itemId],
    );
    return rows.map((r) => parse<{ delta: string }>(r.data).delta).join("");
  }

  async hasApprovalRule(workspacePath: string, scopeKey: string): Promise<boolean> {
    const rows = await this.rows("SELECT 1 FROM approval_rules WHERE workspace_path = $1 AND scope_key = $2", [workspacePath, scopeKey]);
    return rows.length > 0;
  }

  async rebuild(): Promise<void> {
    await this.flush();
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("DELETE FROM items; DELETE FROM turns; DELETE FROM threads; DELETE FROM approval_rules;");
      for (let after = 0; ;) {
        const { rows } = await client.query<EventRow & { gid: number }>(
          `SELECT gid, ${EVENT_COLUMNS} FROM events WHERE gid > $1 AND type <> 'item.delta' ORDER BY gid LIMIT 1000`,
          [after],
        );
        if (rows.length === 0) break;
        for (const row of rows) for (const write of projectEvent(toEvent(row))) await applyWrite(client, write);
        after = rows[rows.length - 1]!.gid;
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
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
      await this.pool.end();
    }
  }
}

/** Writes one projection change inside the caller's transaction. */
async function applyWrite(client: PoolClient, w: ProjectionWrite): Promise<void> {
  const threadExists = "WHERE EXISTS (SELECT 1 FROM threads WHERE id = $2)";
  switch (w.op) {
    case "insertThread": {
      const r = w.row;
      const values = [
        r.id,
        r.workspace_path,
        r.user_id,
        r.origin_channel,
        r.channel_context,
        r.display_name,
        r.status,
        r.created_at,
        r.last_active_at,
        r.history_mode,
        r.mode,
        r.configuration,
        r.metadata,
        r.queued_inputs,
        r.plan,
        r.forked_from,
        r.backend_session,
      ];
      const columns = THREAD_COLUMNS.split(", ");
      const updates = columns.slice(1).map((c) => `${c} = excluded.${c}`);
      await client.query(
        `INSERT INTO threads (${THREAD_COLUMNS}) VALUES (${values.map((_, i) => `$${i + 1}`).join(", ")})
         ON CONFLICT (id) DO UPDATE SET ${updates.join(", ")}`,
        values,
      );
      return;
    }
    case "setThread":
      await client.query(`UPDATE threads SET ${w.column} = $1 WHERE id = $2`, [w.value, w.threadId]);
      return;
    case "touchThread":
      await client.query("UPDATE threads SET last_active_at = greatest(last_active_at, $1) WHERE id = $2", [w.at, w.threadId]);
      return;
    case "deleteThread":
      await client.query("DELETE FROM items WHERE thread_id = $1", [w.threadId]);
      await client.query("DELETE FROM turns WHERE thread_id = $1", [w.threadId]);
      await client.query("DELETE FROM threads WHERE id = $1", [w.threadId]);
      return;
    case "insertTurn": {
      const r = w.row;
      await client.query(
        `INSERT INTO turns (id, thread_id, seq, status, started_at, completed_at, token_usage, error, input, model)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 ${threadExists} ON CONFLICT (id) DO NOTHING`,
        [r.id, r.thread_id, r.seq, r.status, r.started_at, r.completed_at, r.token_usage, r.error, r.input, r.model],
      );
      return;
    }
    case "finishTurn":
      await client.query(
        `UPDATE turns SET status = $1, completed_at = $2, token_usage = coalesce($3, token_usage), error = $4, cancel_reason = $5
         WHERE id = $6`,
        [w.status, w.completedAt, w.tokenUsage, w.error, w.cancelReason, w.turnId],
      );
      return;
    case "setTurn":
      await client.query(`UPDATE turns SET ${w.column} = $1 WHERE id = $2`, [w.value, w.turnId]);
      return;
    case "putItem": {
      const r = w.row;
      await client.query(
        `INSERT INTO items (id, thread_id, turn_id, ord, type, data) SELECT $1, $2, $3, $4, $5, $6 ${threadExists}
         ON CONFLICT (id) DO ${w.replace ? "UPDATE SET data = excluded.data" : "NOTHING"}`,
        [r.id, r.thread_id, r.turn_id, r.ord, r.type, r.data],
      );
      return;
    }
    case "insertRule":
      await client.query("INSERT INTO approval_rules (workspace_path, scope_key) VALUES ($1, $2) ON CONFLICT DO NOTHING", [
        w.workspacePath,
        w.scopeKey,
      ]);
      return;
  }
}
