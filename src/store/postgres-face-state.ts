// Face state on PostgreSQL, shared by every node: a record is held while the node that holds it
// is alive (its liveness lock, see postgres-node.ts); a queue's writers and takers take turns on
// an advisory lock, so its ids follow commit order; broadcasts are rows read like the event
// feed (after a cursor, below the snapshot's xmin), woken by the same one notification per
// commit, and deleted after a minute.
import type { Pool, PoolClient, QueryResult } from "pg";
import {
  dropsToFit,
  type FaceRecord,
  type FaceState,
  fits,
  type PutRecordOptions,
  type QueueLimits,
  type QueueSize,
} from "./face-state.js";
import { FEED_CHANNEL, nodeAlive } from "./postgres-node.js";
import { inTransaction } from "./postgres-schema.js";
import { prepared } from "./postgres-prepared.js";
import { script, type Statement } from "./postgres-script.js";
import { lookIfLost, unreachable } from "./postgres-errors.js";
import { newId } from "../ids.js";

/** The advisory lock class of queue locks: pg_advisory_xact_lock(QUEUE_LOCK_CLASS, hashtext(queue)). */
const QUEUE_LOCK_CLASS = 0x5377_7965;
const BROADCAST_PAGE = 500;
/** Rows of a full queue read at a time to find what to drop (usually one goes). */
const DROP_PAGE = 64;
/** Broadcasts are deleted after this long: a node away longer misses them (they are not a log). */
const BROADCAST_RETENTION = "1 minute";
const PRUNE_EVERY_MS = 30_000;
/** A take's copy of what it took is deleted after this long: a node must settle a lost take sooner. */
const TAKEN_RETENTION = "10 minutes";

/** A queue's writers and takers take turns on this lock, held to the end of the transaction. */
function queueLock(queue: string): Statement {
  return { text: "SELECT pg_advisory_xact_lock($1, hashtext($2))", values: [QUEUE_LOCK_CLASS, queue] };
}

type RecordRow = { key: string; value: string; held: boolean };

export class PostgresFaceState implements FaceState {
  readonly shared = true;
  /** This node's number, set once it has joined. */
  node = 0;
  private cursor: { xid: string; id: number };
  private readonly listeners = new Map<string, Array<(bodies: string[]) => void>>();
  private prunedAt = Date.now();
  private takesPrunedAt = 0;
  /** By queue, the tokens of this node's takes that failed: one of them may have been committed. */
  private readonly unsettledTakes = new Map<string, string[]>();

  constructor(
    private readonly pool: Pool,
    /** A connection of the pool for a transaction (with its error listener). */
    private readonly connect: () => Promise<PoolClient>,
    xmin: string,
    private readonly leaseTtlMs: number,
  ) {
    this.cursor = { xid: xmin, id: 0 };
  }

  async putRecord(ns: string, key: string, value: string | undefined, opts: PutRecordOptions = {}): Promise<boolean> {
    const holder = opts.held === undefined ? undefined : opts.held ? this.node : null;
    if (value === undefined) {
      const onlyHere = opts.ifHeldHere ? " AND holder = $3" : "";
      return (
        (
          await this.query(`DELETE FROM face_records WHERE ns = $1 AND key = $2${onlyHere}`, [
            ns,
            key,
            ...(opts.ifHeldHere ? [this.node] : []),
          ])
        ).rowCount !== 0
      );
    }
    if (opts.ifHeldHere) {
      const setHolder = holder === undefined ? "" : ", holder = $5";
      const { rowCount } = await this.query(`UPDATE face_records SET value = $3${setHolder} WHERE ns = $1 AND key = $2 AND holder = $4`, [
        ns,
        key,
        value,
        this.node,
        ...(holder === undefined ? [] : [holder]),
      ]);
      return rowCount !== 0;
    }
    const onConflict = opts.ifAbsent
      ? "DO NOTHING"
      : `DO UPDATE SET value = excluded.value${holder === undefined ? "" : ", holder = excluded.holder"}`;
    const { rowCount } = await this.query(
      `INSERT INTO face_records (ns, key, value, holder) VALUES ($1, $2, $3, $4) ON CONFLICT (ns, key) ${onConflict}`,
      [ns, key, value, holder ?? null],
    );
    return rowCount !== 0;
  }

  async getRecord(ns: string, key: string): Promise<FaceRecord | undefined> {
    const { rows } = await this.query<RecordRow>(`${this.recordSelect()} AND key = $3`, [ns, this.node, key]);
    return rows[0];
  }

  async listRecords(ns: string): Promise<FaceRecord[]> {
    return (await this.query<RecordRow>(`${this.recordSelect()} ORDER BY key`, [ns, this.node])).rows;
  }

  private recordSelect(): string {
    return `SELECT key, value, coalesce(r.holder = $2 OR ${nodeAlive("r.holder", this.leaseTtlMs)}, false) AS held
            FROM face_records r WHERE ns = $1`;
  }

  /**
   * Adds a message to the queue, dropping its oldest as the limits say, in a transaction that
   * holds the queue's lock (one writer or taker at a time): BEGIN, the lock and the insert go in
   * one round trip (a relay queues each message for an agent that is away: thousands in a row).
   * An enqueue whose answer was lost is looked for by its token, in the queue or among what
   * takes took, before it is reported failed: its sender, told it failed, would send it again.
   */
  async enqueue(queue: string, body: string, opts: { keep: boolean; limits: QueueLimits }): Promise<{ queued: number; dropped: number }> {
    const token = newId("msg");
    const add = [
      queueLock(queue),
      {
        text: "INSERT INTO face_queue (queue, body, keep, bytes, token) VALUES ($1, $2, $3, $4, $5)",
        values: [queue, body, opts.keep, Buffer.byteLength(body), token],
      },
      {
        text: `INSERT INTO face_queue_sizes (queue, count, bytes) VALUES ($1, 1, $2)
               ON CONFLICT (queue) DO UPDATE SET count = face_queue_sizes.count + 1, bytes = face_queue_sizes.bytes + excluded.bytes
               RETURNING count, bytes`,
        values: [queue, Buffer.byteLength(body)],
      },
    ];
    return lookIfLost(
      () =>
        inTransaction(this.connect, (client, [, , sized]) => this.dropToFit(client, queue, sized!.rows[0] as QueueSize, opts.limits), add),
      // Still queued, or taken already (by this relay or another, in the moment before the look).
      async () => {
        const { rows } = await this.query<{ count: number }>(
          `SELECT coalesce((SELECT count FROM face_queue_sizes WHERE queue = $1), 0) AS count
           WHERE EXISTS (SELECT 1 FROM face_queue WHERE queue = $1 AND token = $2)
              OR EXISTS (SELECT 1 FROM face_queue_taken WHERE $2 = ANY(tokens))`,
          [queue, token],
        );
        return rows[0] && { queued: rows[0].count, dropped: 0 };
      },
    );
  }

  /** Drops the queue's oldest messages, droppable ones first, until it fits its limits. */
  private async dropToFit(
    client: PoolClient,
    queue: string,
    size: QueueSize,
    limits: QueueLimits,
  ): Promise<{ queued: number; dropped: number }> {
    const drops: number[] = [];
    for (const keep of [false, true]) {
      for (let after = 0; !fits(size, limits);) {
        const { rows } = await client.query<{ id: number; bytes: number }>(
          prepared("SELECT id, bytes FROM face_queue WHERE queue = $1 AND keep = $2 AND id > $3 ORDER BY id LIMIT $4", [
            queue,
            keep,
            after,
            Math.max(DROP_PAGE, size.count - limits.messages),
          ]),
        );
        drops.push(...dropsToFit(size, limits, rows));
        if (rows.length === 0) break;
        after = rows.at(-1)!.id;
      }
    }
    if (drops.length > 0) {
      await client.query(
        script([
          { text: "DELETE FROM face_queue WHERE id = ANY($1::bigint[])", values: [drops] },
          { text: "UPDATE face_queue_sizes SET count = $2, bytes = $3 WHERE queue = $1", values: [queue, size.count, size.bytes] },
        ]),
      );
    }
    return { queued: size.count, dropped: drops.length };
  }

  /**
   * Takes what the queue holds, oldest first, in one round trip (a script is one transaction).
   * The take keeps a copy of what it took under a token of its own: a take whose answer was lost
   * (its connection broke as it committed) may have been committed all the same, and this
   * node's next take of the queue then finds those messages by that token and sends them first.
   * Of the tokens a node has not settled for a queue, at most one has a copy: each take that
   * commits replaces them with its own.
   */
  async takeQueued(queue: string): Promise<string[]> {
    const token = newId("take");
    const unsettled = this.unsettledTakes.get(queue) ?? [];
    const prune = Date.now() - this.takesPrunedAt > PRUNE_EVERY_MS;
    const take: Statement[] = [
      queueLock(queue),
      {
        text: `WITH settled AS (DELETE FROM face_queue_taken WHERE token = ANY($3::text[]) RETURNING bodies, tokens),
                    taken AS (DELETE FROM face_queue WHERE queue = $1 RETURNING id, body, token)
               INSERT INTO face_queue_taken (token, bodies, tokens)
               SELECT $2, coalesce((SELECT bodies FROM settled), '{}') || coalesce((SELECT array_agg(body ORDER BY id) FROM taken), '{}'),
                      coalesce((SELECT tokens FROM settled), '{}') || coalesce((SELECT array_agg(token) FROM taken), '{}')
               RETURNING bodies`,
        values: [queue, token, unsettled],
      },
      { text: "DELETE FROM face_queue_sizes WHERE queue = $1", values: [queue] },
      ...(prune ? [{ text: `DELETE FROM face_queue_taken WHERE taken_at < now() - interval '${TAKEN_RETENTION}'`, values: [] }] : []),
    ];
    try {
      const [, taken] = (await this.pool.query(script(take))) as unknown as QueryResult<{ bodies: string[] }>[];
      this.unsettledTakes.delete(queue);
      if (prune) this.takesPrunedAt = Date.now();
      return taken!.rows[0]!.bodies;
    } catch (error) {
      this.unsettledTakes.set(queue, [...unsettled, token]);
      throw unreachable(error);
    }
  }

  async broadcast(channel: string, bodies: string[]): Promise<void> {
    if (bodies.length === 0) return;
    await this.query(
      `WITH sent AS (INSERT INTO face_broadcasts (node, channel, bodies) VALUES ($1, $2, $3) RETURNING 1)
       SELECT pg_notify('${FEED_CHANNEL}', '') FROM sent`,
      [this.node, channel, bodies],
    );
  }

  onBroadcast(channel: string, listener: (bodies: string[]) => void): void {
    this.listeners.set(channel, [...(this.listeners.get(channel) ?? []), listener]);
  }

  /** Reads the broadcasts other nodes committed since the cursor and hands them to the listeners. */
  async read(): Promise<void> {
    // A node no face listens on (an app-server) has nothing to read: every commit wakes the
    // reader, so this saves a query per commit. The cursor waits where it is for a first listener.
    if (this.listeners.size === 0) return;
    for (let full = true; full;) {
      const { rows } = await this.pool.query<{ xid: string; id: number; node: number; channel: string; bodies: string[] }>(
        prepared(
          `SELECT xid::text AS xid, id, node, channel, bodies FROM face_broadcasts
         WHERE (xid, id) > ($1::xid8, $2) AND xid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY face_broadcasts.xid, face_broadcasts.id LIMIT ${BROADCAST_PAGE}`,
          [this.cursor.xid, this.cursor.id],
        ),
      );
      full = rows.length === BROADCAST_PAGE;
      const last = rows.at(-1);
      if (!last) break;
      this.cursor = { xid: last.xid, id: last.id };
      for (const row of rows) {
        if (row.node === this.node) continue;
        for (const listener of this.listeners.get(row.channel) ?? []) listener(row.bodies);
      }
    }
    if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
      this.prunedAt = Date.now();
      await this.pool.query(`DELETE FROM face_broadcasts WHERE sent_at < now() - interval '${BROADCAST_RETENTION}'`);
    }
  }

  private async query<R extends object>(sql: string, params: unknown[]): Promise<QueryResult<R>> {
    try {
      return await this.pool.query<R>(prepared(sql, params));
    } catch (error) {
      throw unreachable(error);
    }
  }
}
