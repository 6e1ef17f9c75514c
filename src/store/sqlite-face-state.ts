// Face state on SQLite: one process has the data directory, so a record is held when this
// process (this store's opening) holds it, and a broadcast has nobody to reach.
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3";
import {
  dropsToFit,
  type FaceRecord,
  type FaceState,
  fits,
  type PutRecordOptions,
  type QueueLimits,
  type QueueSize,
} from "./face-state.js";

// v6 of the SQLite schema.
export const FACE_STATE_SCHEMA = `
CREATE TABLE face_records (
  ns     TEXT NOT NULL,
  key    TEXT NOT NULL,
  value  TEXT NOT NULL,
  holder TEXT,
  PRIMARY KEY (ns, key)
) WITHOUT ROWID;

CREATE TABLE face_queue (
  id    INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT    NOT NULL,
  body  TEXT    NOT NULL,
  keep  INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE INDEX face_queue_order ON face_queue(queue, id);
`;

type RecordRow = { key: string; value: string; holder: string | null };

export class SqliteFaceState implements FaceState {
  readonly shared = false;
  /** Holds of earlier openings (a previous run) read as not held. */
  private readonly holder = randomUUID();
  private readonly stmts;
  /**
   * Each queue's size, read once and then kept here (one process writes this database): adding
   * to a queue summed every message already in it, so filling a queue took time quadratic in
   * its length (1.2 s for 5,000).
   */
  private readonly sizes = new Map<string, QueueSize>();

  constructor(private readonly db: Database.Database) {
    this.stmts = {
      get: db.prepare<[string, string], RecordRow>("SELECT key, value, holder FROM face_records WHERE ns = ? AND key = ?"),
      list: db.prepare<[string], RecordRow>("SELECT key, value, holder FROM face_records WHERE ns = ? ORDER BY key"),
      put: db.prepare<[string, string, string, string | null]>(
        "INSERT INTO face_records (ns, key, value, holder) VALUES (?, ?, ?, ?) ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, holder = excluded.holder",
      ),
      delete: db.prepare<[string, string]>("DELETE FROM face_records WHERE ns = ? AND key = ?"),
      enqueue: db.prepare<[string, string, number, number]>("INSERT INTO face_queue (queue, body, keep, bytes) VALUES (?, ?, ?, ?)"),
      size: db.prepare<[string], QueueSize>("SELECT count(*) AS count, coalesce(sum(bytes), 0) AS bytes FROM face_queue WHERE queue = ?"),
      oldest: db.prepare<[string, number], { id: number; bytes: number }>(
        "SELECT id, bytes FROM face_queue WHERE queue = ? AND keep = ? ORDER BY id",
      ),
      dropQueued: db.prepare<[number]>("DELETE FROM face_queue WHERE id = ?"),
      take: db.prepare<[string], string>("DELETE FROM face_queue WHERE queue = ? RETURNING id, body").raw(),
    };
  }

  putRecord(ns: string, key: string, value: string | undefined, opts: PutRecordOptions = {}): Promise<boolean> {
    return this.run(() =>
      this.db.transaction(() => {
        const current = this.stmts.get.get(ns, key);
        if (opts.ifAbsent && current) return false;
        if (opts.ifHeldHere && current?.holder !== this.holder) return false;
        if (value === undefined) this.stmts.delete.run(ns, key);
        else {
          const holder = opts.held === undefined ? (current?.holder ?? null) : opts.held ? this.holder : null;
          this.stmts.put.run(ns, key, value, holder);
        }
        return true;
      })(),
    );
  }

  getRecord(ns: string, key: string): Promise<FaceRecord | undefined> {
    return this.run(() => {
      const row = this.stmts.get.get(ns, key);
      return row && this.toRecord(row);
    });
  }

  listRecords(ns: string): Promise<FaceRecord[]> {
    return this.run(() => this.stmts.list.all(ns).map((row) => this.toRecord(row)));
  }

  enqueue(queue: string, body: string, opts: { keep: boolean; limits: QueueLimits }): Promise<{ queued: number; dropped: number }> {
    return this.run(() => {
      const before = this.sizes.get(queue) ?? this.stmts.size.get(queue)!;
      const bytes = Buffer.byteLength(body);
      const { size, dropped } = this.db.transaction(() => {
        this.stmts.enqueue.run(queue, body, opts.keep ? 1 : 0, bytes);
        const size = { count: before.count + 1, bytes: before.bytes + bytes };
        if (fits(size, opts.limits)) return { size, dropped: 0 };
        // Read lazily (a statement's rows are stepped as they are taken), and all taken before
        // the deletes: the connection runs one statement at a time.
        const stmts = this.stmts;
        const dropOrder = (function* () {
          yield* stmts.oldest.iterate(queue, 0);
          yield* stmts.oldest.iterate(queue, 1);
        })();
        const drops = [...dropsToFit(size, opts.limits, dropOrder)];
        for (const id of drops) this.stmts.dropQueued.run(id);
        return { size, dropped: drops.length };
      })();
      this.sizes.set(queue, size); // once committed
      return { queued: size.count, dropped };
    });
  }

  takeQueued(queue: string): Promise<string[]> {
    return this.run(() => {
      const taken = this.stmts.take.all(queue) as unknown as Array<[number, string]>;
      this.sizes.delete(queue);
      return taken.sort((a, b) => a[0] - b[0]).map(([, body]) => body);
    });
  }

  broadcast(): Promise<void> {
    return Promise.resolve();
  }

  onBroadcast(): void {}

  private toRecord(row: RecordRow): FaceRecord {
    return { key: row.key, value: row.value, held: row.holder === this.holder };
  }

  /** A synchronous statement as a promise: its error (a full disk) rejects it. */
  private run<T>(work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }
}
