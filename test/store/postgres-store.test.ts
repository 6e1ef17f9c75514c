// The PostgreSQL store against the SQLite one: the same events appended to both give the same
// answer to every read; seq is contiguous per thread; a reopened store continues where the log
// ends; a schema newer than the binary is refused.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Pool, PoolClient } from "pg";
import { PostgresStore, type PostgresStoreOptions } from "../../src/store/postgres-store.js";
import { preparedNamesOf } from "../../src/store/postgres-prepared.js";
import { checkout, FENCE_LOCK_CLASS, POSTGRES_SCHEMA_VERSION, postgresPool } from "../../src/store/postgres-schema.js";
import { describeFeedHolder, feedHolder, FeedHoldWatch, lastingFeedHolder } from "../../src/store/feed-holder.js";
import { openStore } from "../../src/store/sqlite-store.js";
import { LogConflictError, type StorageStatus, type Store } from "../../src/store/store.js";
import type { RuntimeEvent } from "../../src/domain/events.js";
import { eventually } from "../support/agentcraft.js";
import { postgresMissing, TestPostgres } from "../support/postgres.js";
import { agentItem, makeThread, makeTurn, populate } from "../support/store-events.js";

/**
 * Every read of the Store interface, for these threads, as one comparable value. Times the
 * stores took from their clocks at append (a thread's lastActiveAt) are left out.
 */
async function everything(store: Store, threadIds: string[]): Promise<unknown> {
  return JSON.parse(JSON.stringify(await reads(store, threadIds), (key, value: unknown) => (key === "lastActiveAt" ? "(time)" : value)));
}

async function reads(store: Store, threadIds: string[]) {
  const out: Record<string, unknown> = {
    list: await store.listThreads({}, { limit: 100 }),
    listAlice: await store.listThreads({ userId: "alice", hideArchived: true }, { limit: 100 }),
    unfinished: await store.listUnfinishedTurns(),
    usages: await store.turnUsages(threadIds),
    // Every thread's first two events, and a thread with none (seqs differ: SQLite's are the log's).
    eventsAfterEach: [
      ...(await store.eventsAfterEach(
        [...threadIds, "none"].map((threadId) => ({ threadId, afterSeq: 0 })),
        2,
      )),
    ].map(([threadId, events]) => [threadId, events.map(({ type, data }) => ({ type, data }))]),
    rule: await store.hasApprovalRule("/ws/a", "shell:ls"),
    noRule: await store.hasApprovalRule("/ws/b", "shell:ls"),
  };
  for (const id of threadIds) {
    const turns = await store.listTurns(id, { withItems: true });
    out[id] = {
      thread: await store.getThread(id),
      turns,
      bare: await store.listTurns(id, { withItems: false }),
      items: await store.itemsJsonByTurn(id),
      turn: turns[0] && (await store.getTurn(turns[0].id)),
      turnItems: turns[0] && (await store.listItems(turns[0].id)),
      deltas: await store.deltasOf("i1"),
      events: (await store.eventsAfter(id, 0)).map(({ type, data }) => ({ type, data })),
    };
  }
  return out;
}

/**
 * A proxy to PostgreSQL that ends each connection as a database shutting down does, right
 * after its start-up: the error message in the same write as the ReadyForQuery.
 */
async function endingProxy(port: number): Promise<{ port: number; close: () => void }> {
  const fatal = ["SFATAL", "VFATAL", "C57P01", "Mterminating connection due to administrator command", ""].join("\0") + "\0";
  const error = Buffer.alloc(5 + Buffer.byteLength(fatal));
  error.write("E", 0);
  error.writeInt32BE(4 + Buffer.byteLength(fatal), 1);
  error.write(fatal, 5);
  const proxy = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    client.pipe(upstream);
    let pending = Buffer.alloc(0);
    upstream.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      // Server messages: a type byte and a length that counts itself; pass them on up to the ReadyForQuery ('Z').
      for (let at = 0; at + 5 <= pending.length;) {
        const end = at + 1 + pending.readInt32BE(at + 1);
        if (end > pending.length) break;
        if (pending[at] === 0x5a) {
          client.end(Buffer.concat([pending.subarray(0, end), error]));
          upstream.destroy();
          return;
        }
        at = end;
      }
    });
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return { port: (proxy.address() as net.AddressInfo).port, close: () => proxy.close() };
}

/**
 * Takes a database back to schema version 10: what migrations 11 to 15 added goes (13's column
 * with 12's table), and switchyard_append gets version 10's signature back (a stand-in: 15
 * replaces it).
 */
const BACK_TO_VERSION_10 =
  "DROP TABLE face_queue_sizes, face_queue_taken; ALTER TABLE thread_commands DROP COLUMN claim; ALTER TABLE face_queue DROP COLUMN token; " +
  "ALTER TABLE events DROP COLUMN last_seq; DROP FUNCTION switchyard_commit, switchyard_project, switchyard_append; " +
  "CREATE FUNCTION switchyard_append(INTEGER, TEXT[], BIGINT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[]) RETURNS VOID LANGUAGE plpgsql AS 'BEGIN END'; " +
  "UPDATE switchyard_schema SET version = 10";

interface FaultyProxy {
  port: number;
  loseNextAnswer: (marker?: string, where?: "query" | "answer", meanwhile?: () => Promise<unknown>) => void;
  cutBefore: (marker: string) => void;
  holdNextAnswer: (marker: string) => () => void;
  /** Every query holding `marker`, and what follows it on its connection, waits until the function returned is called. */
  holdQueries: (marker: string) => () => void;
  /** From now on, counts the queries sent that hold `marker`: read the count with the function returned. */
  countQueries: (marker: string) => () => number;
  stall: () => void;
  resume: () => void;
  close: () => void;
}

/**
 * A proxy to PostgreSQL with faults on call. `loseNextAnswer`: the next query whose message
 * holds `marker` (by default a commit of events), or the next answer that holds it, goes on to
 * the database, and the connection is dropped instead of its answer (the query is applied, and
 * the node cannot know it); `meanwhile`, when given, runs before the connection is dropped.
 * `cutBefore`: the connection is dropped as the next query holding `marker` is sent; it never
 * reaches the database. `holdNextAnswer`: the next answer that holds `marker`, and what follows
 * it on that connection, waits until the function it returns is called (a slow answer).
 * `stall`: nothing goes either way, and nothing fails (a network that drops packets), until
 * `resume`.
 */
async function faultyProxy(port: number): Promise<FaultyProxy> {
  /** The markers of the query, or the answer, that is to be lost; or of the query never to reach the database. */
  let armed: { markers: string[]; where: "query" | "answer" | "unsent"; meanwhile?: () => Promise<unknown> } | undefined;
  let stalled: Array<() => void> | undefined;
  /** The answer held back: its marker, the connection it came on, and the writes waiting. */
  type Hold = { marker: string; on?: net.Socket; waiting: Array<() => unknown> };
  let hold: Hold | undefined;
  const sockets = new Set<net.Socket>();
  /** Queries held back: their marker, and the sends of the connections they came on. */
  const heldQueries: Array<{ marker: string; on: Map<net.Socket, Array<() => unknown>> }> = [];
  const counters: Array<{ marker: string; count: number }> = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => (client.destroy(), upstream.destroy()));
    }
    const pass = (send: () => void): void => void (stalled ? stalled.push(send) : send());
    let trapped: { meanwhile?: () => Promise<unknown> } | undefined;
    let dropping: Promise<unknown> | undefined;
    const drop = (): unknown => (dropping ??= (trapped?.meanwhile?.() ?? Promise.resolve()).finally(() => client.destroy()));
    // A query holds a marker in its text, or in the name of its prepared statement once the connection has it.
    const holds = (chunk: Buffer, marker: string): boolean =>
      chunk.includes(marker) || preparedNamesOf(marker).some((name) => chunk.includes(`\0${name}\0`));
    client.on("data", (chunk: Buffer) => {
      if (armed?.where === "unsent" && armed.markers.some((marker) => holds(chunk, marker))) {
        armed = undefined;
        return client.destroy();
      }
      if (armed?.where === "query" && armed.markers.some((marker) => holds(chunk, marker))) [armed, trapped] = [undefined, armed];
      for (const counter of counters) if (holds(chunk, counter.marker)) counter.count++;
      const held = heldQueries.find((h) => h.on.has(client) || holds(chunk, h.marker));
      if (held) return void held.on.set(client, [...(held.on.get(client) ?? []), () => upstream.write(chunk)]);
      pass(() => upstream.write(chunk));
    });
    upstream.on("data", (chunk: Buffer) => {
      if (armed?.where === "answer" && armed.markers.some((marker) => chunk.includes(marker))) [armed, trapped] = [undefined, armed];
      if (hold && !hold.on && chunk.includes(hold.marker)) hold.on = client;
      const send = (): unknown => (trapped ? drop() : client.write(chunk));
      if (hold?.on === client) hold.waiting.push(send);
      else pass(send);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    // By default a commit of events: the append alone, or with projection writes.
    loseNextAnswer: (marker, where = "query", meanwhile) =>
      (armed = { markers: marker ? [marker] : ["switchyard_append", "switchyard_commit"], where, meanwhile }),
    cutBefore: (marker) => (armed = { markers: [marker], where: "unsent" }),
    holdNextAnswer: (marker) => {
      const mine: Hold = { marker, waiting: [] };
      hold = mine;
      return () => {
        if (hold === mine) hold = undefined;
        for (const send of mine.waiting) send();
      };
    },
    holdQueries: (marker) => {
      const mine = { marker, on: new Map<net.Socket, Array<() => unknown>>() };
      heldQueries.push(mine);
      return () => {
        heldQueries.splice(heldQueries.indexOf(mine), 1);
        for (const sends of mine.on.values()) for (const send of sends) send();
      };
    },
    countQueries: (marker) => {
      const counter = { marker, count: 0 };
      counters.push(counter);
      return () => counter.count;
    },
    stall: () => (stalled ??= []),
    resume: () => {
      const held = stalled ?? [];
      stalled = undefined;
      for (const send of held) send();
    },
    close: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

describe("PostgreSQL store", { skip: postgresMissing() }, () => {
  let server: TestPostgres;
  let databases = 0;
  const freshUrl = (): string => server.createDatabase(`store${++databases}`);
  before(async () => (server = await TestPostgres.start()));
  after(() => server?.stop());

  /** A store on the database at `url` through a faulty proxy of its own. */
  async function storeThroughProxy(url: string, opts?: PostgresStoreOptions): Promise<{ store: PostgresStore; proxy: FaultyProxy }> {
    const proxy = await faultyProxy(server.port);
    const through = new URL(url);
    through.port = String(proxy.port);
    return { store: await PostgresStore.open(through.href, opts), proxy };
  }

  /** Runs `work` on a SQLite store and on a PostgreSQL one, each fresh, and closes both. */
  async function onBothStores(work: (store: Store) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(path.join(os.tmpdir(), "switchyard-store-"));
    const stores: Store[] = [openStore(dir), await PostgresStore.open(freshUrl())];
    try {
      for (const store of stores) await work(store);
    } finally {
      for (const store of stores) await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("answers every read as the SQLite store does for the same events", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "switchyard-store-"));
    const sqlite = openStore(dir);
    const postgres = await PostgresStore.open(freshUrl());
    try {
      for (const store of [sqlite, postgres]) {
        populate(store, "t1");
        populate(store, "t2");
        store.append({ type: "thread.created", threadId: "t3", data: { thread: makeThread("t3", { userId: "alice" }) } });
        store.append({ type: "turn.started", threadId: "t3", data: { turn: makeTurn("u9", "t3") } });
        store.append({ type: "item.started", threadId: "t3", data: { item: agentItem("i9", "t3", "u9", "") } });
        store.append({ type: "thread.deleted", threadId: "t2", data: {} });
      }
      const ids = ["t1", "t2", "t3"];
      assert.deepEqual(await everything(postgres, ids), await everything(sqlite, ids));
      // And after rebuilding the projections from the log.
      await postgres.rebuild();
      assert.deepEqual(await everything(postgres, ids), await everything(sqlite, ids));
    } finally {
      await sqlite.close();
      await postgres.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("numbers each thread's events 1, 2, 3…; a reopened store continues after the committed log", async () => {
    const url = freshUrl();
    let store = await PostgresStore.open(url);
    populate(store, "t1");
    store.append({ type: "thread.created", threadId: "t2", data: { thread: makeThread("t2") } });
    const t1 = await store.eventsAfter("t1", 0);
    assert.deepEqual(
      t1.map((e) => e.seq),
      t1.map((_, i) => i + 1),
    );
    assert.deepEqual(
      (await store.eventsAfter("t2", 0)).map((e) => e.seq),
      [1],
    );
    assert.equal(await store.lastSeq("t1"), t1.length);
    await store.close();

    store = await PostgresStore.open(url);
    try {
      assert.equal(await store.lastSeq("t1"), t1.length);
      // A new process owns no thread until it claims it.
      assert.throws(() => store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "unclaimed" } }), {
        code: "notOwner",
      });
      assert.equal(await store.acquire("t1"), true);
      const next = store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "again" } });
      assert.equal(next.seq, t1.length + 1);
      assert.equal((await store.getThread("t1"))?.displayName, "again");
    } finally {
      await store.close();
    }
  });

  it("stores any text as given (a commit is one script with the values written in as literals)", async () => {
    const store = await PostgresStore.open(freshUrl());
    try {
      const odd = `it's "quoted" \\ back\\\\slashes \\' $1 $$ $q$ {a,"b"} NULL \n\t é ✓ 😀 ;--`;
      store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1", { displayName: odd }) } });
      store.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u1", "t1") } });
      store.append({ type: "item.started", threadId: "t1", data: { item: agentItem("i1", "t1", "u1", "") } });
      store.append({ type: "item.delta", threadId: "t1", data: { turnId: "u1", itemId: "i1", kind: "agentMessage", delta: odd } });
      store.append({ type: "item.completed", threadId: "t1", data: { item: agentItem("i1", "t1", "u1", odd, true) } });
      await store.flush();
      assert.equal((await store.getThread("t1"))?.displayName, odd);
      assert.equal(await store.deltasOf("i1"), odd);
      assert.deepEqual(
        (await store.listItems("u1")).map((i) => i.payload),
        [{ text: odd }],
      );
    } finally {
      await store.close();
    }
  });

  it("a read of a thread waits for this node's pending events of that thread, not of others, nor a starting turn's own", async () => {
    const url = freshUrl();
    const store = await PostgresStore.open(url);
    const pool = await postgresPool(url);
    const blocker = await pool.connect();
    try {
      store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      store.append({ type: "thread.created", threadId: "t2", data: { thread: makeThread("t2") } });
      await store.flush();
      const { rows } = await pool.query<{ node: number }>("SELECT node FROM thread_owners WHERE thread_id = 't1'");
      // The node's commits wait while its fence lock is held exclusively (as a claim holds it).
      await blocker.query("BEGIN");
      await blocker.query("SELECT pg_advisory_xact_lock($1, $2)", [FENCE_LOCK_CLASS, rows[0]!.node]);
      store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "pending" } });
      store.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u1", "t1") } });

      // Were the read to wait for a commit, it would wait until the lock is let go: fail instead.
      const blocked = (what: string) =>
        new Promise<never>((_, reject) => {
          const timer = setTimeout(() => reject(new Error(`${what} waited for a commit`)), 5_000);
          timer.unref();
        });
      assert.equal((await Promise.race([store.getThread("t2"), blocked("a read of t2")]))?.id, "t2");
      assert.equal((await store.eventsAfter("t2", 0)).length, 1);
      let t1Read = false;
      const t1 = store.getThread("t1").then((thread) => ((t1Read = true), thread));
      const turn = store.getTurn("u1");
      await store.getThread("t2");
      assert.equal(t1Read, false, "a read of t1 waits for t1's pending events to be committed");
      await blocker.query("COMMIT");
      assert.equal((await t1)?.displayName, "pending");
      assert.equal((await turn)?.status, "running", "a turn not committed yet is read once its thread's events are");

      // A starting turn's history: the turns before it, read without waiting for its own events.
      await blocker.query("BEGIN");
      await blocker.query("SELECT pg_advisory_xact_lock($1, $2)", [FENCE_LOCK_CLASS, rows[0]!.node]);
      const started = store.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u2", "t1") } });
      const history = store.listTurns("t1", { withItems: true, committedBefore: started.seq });
      const before = await Promise.race([history, blocked("a turn's history")]);
      assert.deepEqual(
        before.map((t) => t.id),
        ["u1"],
      );
      await blocker.query("COMMIT");
    } finally {
      blocker.release();
      await pool.end();
      await store.close();
    }
  });

  it("tells committed events to its listeners in seq order, once", async () => {
    const store = await PostgresStore.open(freshUrl());
    try {
      const told: number[] = [];
      store.onCommit((events) => told.push(...events.map((e) => e.seq)));
      populate(store, "t1");
      await store.flush();
      assert.deepEqual(
        told,
        told.map((_, i) => i + 1),
      );
      assert.equal(told.length, await store.lastSeq("t1"));
    } finally {
      await store.close();
    }
  });

  it("a claim waits for the owner's commit in flight (its fence lock), and the claimed head includes that commit", async () => {
    const url = freshUrl();
    const [a, b] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    const pool = await postgresPool(url);
    const inFlight = await pool.connect();
    try {
      a.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      await a.flush();
      const { rows } = await pool.query<{ node: number }>("SELECT node FROM thread_owners WHERE thread_id = 't1'");
      // A commit of a's that has taken its fence lock and not yet ended: here, held by hand.
      await inFlight.query("BEGIN");
      await inFlight.query("SELECT pg_advisory_xact_lock_shared($1, $2)", [FENCE_LOCK_CLASS, rows[0]!.node]);
      await inFlight.query(
        "INSERT INTO events (thread_id, seq, type, ts, data, writer) VALUES ('t1', 2, 'thread.renamed', '2026-01-01T00:00:00.000Z', '{\"displayName\":\"late\"}', $1)",
        [rows[0]!.node],
      );
      let claimed = false;
      const claim = b.acquire("t1").then((won) => (claimed = won));
      // The claim's transaction is waiting for the lock, in the database, while the commit is open.
      for (;;) {
        const waiting = await pool.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND NOT granted", [
          FENCE_LOCK_CLASS,
        ]);
        if (waiting.rowCount) break;
        assert.equal(claimed, false, "the claim did not wait for the commit in flight");
      }
      assert.equal(claimed, false);
      await inFlight.query("COMMIT");
      assert.equal(await claim, true);
      b.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "next" } });
      await b.flush();
      assert.deepEqual(
        (await b.eventsAfter("t1", 0)).map((e) => e.seq),
        [1, 2, 3],
        "b went on after the commit that was in flight when it claimed",
      );
    } finally {
      inFlight.release();
      await pool.end();
      await a.close();
      await b.close();
    }
  });

  it("fences a node that lost a thread: what it writes after is dropped; the other node's writes reach it", async () => {
    const url = freshUrl();
    const [a, b] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    try {
      const lost: string[] = [];
      a.onLost((threadId) => lost.push(threadId));
      const seenByA: string[] = [];
      const fresh = new Promise<void>((resolve) =>
        a.onCommit((events) => {
          for (const e of events) if (e.type === "thread.renamed") seenByA.push(e.data.displayName);
          if (seenByA.includes("fresh")) resolve();
        }),
      );
      a.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      a.append({ type: "thread.created", threadId: "t2", data: { thread: makeThread("t2") } });
      assert.equal(await a.stillOwns("t1"), true, "its creation not committed yet: no other node knows it");
      await a.flush();
      assert.equal(await a.stillOwns("t1"), true);

      assert.equal(await b.acquire("t1"), true, "an idle thread moves to the node that asks");
      assert.equal(await b.acquire("t2"), true);
      // The database says so before a learns it (at its next read of the feed, or a refused commit).
      assert.equal(await a.stillOwns("t1"), false);
      assert.equal(await b.stillOwns("t1"), true);
      // Both ways a batch commits: with projection writes (a rename), and to the log only (a delta).
      a.append({ type: "item.delta", threadId: "t2", data: { turnId: "u", itemId: "i", kind: "agentMessage", delta: "stale" } });
      await a.flush();
      assert.deepEqual(lost, ["t2"]);
      a.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "stale" } });
      await a.flush();
      assert.deepEqual(lost, ["t2", "t1"]);
      assert.deepEqual(await b.eventsAfter("t2", 1), [], "the fenced delta was not committed");
      assert.throws(() => a.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "later" } }), { code: "notOwner" });

      b.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "fresh" } });
      b.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u1", "t1") } });
      await b.flush();
      assert.deepEqual(
        (await b.eventsAfter("t1", 0)).map((e) => [e.seq, e.type]),
        [
          [1, "thread.created"],
          [2, "thread.renamed"],
          [3, "turn.started"],
        ],
      );
      assert.equal((await a.getThread("t1"))?.displayName, "fresh");
      await fresh; // through the feed, though a no longer writes the thread
      assert.deepEqual(seenByA, ["fresh"]);
      assert.equal(await a.acquire("t1"), false, "not while another live node runs a turn on it");
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("releases a thread: what was pending is committed, later writes need it acquired again, the seq goes on", async () => {
    const store = await PostgresStore.open(freshUrl());
    try {
      store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "pending" } });
      await store.release("t1");
      assert.equal((await store.getThread("t1"))?.displayName, "pending", "committed on release");
      assert.throws(() => store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "x" } }), { code: "notOwner" });
      assert.equal(await store.acquire("t1"), true);
      assert.equal(store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "again" } }).seq, 3);
      await store.flush();
      assert.equal((await store.getThread("t1"))?.displayName, "again");
    } finally {
      await store.close();
    }
  });

  it("reads other nodes' commits in transaction order where the xid gains a digit (…998, 999, 1000…)", async () => {
    const url = freshUrl();
    const reader = await PostgresStore.open(url);
    const [first, second] = [await postgresPool(url), await postgresPool(url)];
    try {
      const seen: number[] = [];
      const both = new Promise<void>((resolve) =>
        reader.onCommit((events) => {
          for (const e of events) if (e.threadId === "tx") seen.push(e.seq);
          if (seen.length >= 2) resolve();
        }),
      );
      const xid = async (): Promise<number> =>
        Number((await second.query<{ x: string }>("SELECT pg_current_xact_id()::text AS x")).rows[0]!.x);
      // Each statement of the DO block commits on its own: one xid each.
      const burnUntil = (target: number) =>
        second.query(`DO $$ BEGIN WHILE pg_current_xact_id()::text::bigint < ${target} LOOP COMMIT; END LOOP; END $$`);
      const boundary = 10 ** String((await xid()) + 10).length;
      await burnUntil(boundary - 3);
      const insert = (db: Pool | PoolClient, seq: number) =>
        db.query<{ x: string }>(
          `INSERT INTO events (thread_id, seq, type, ts, data) VALUES ('tx', $1, 'thread.renamed', now()::text, '{"displayName":"x"}') RETURNING xid::text AS x`,
          [seq],
        );
      // seq 1 in a transaction below the boundary, held open while seq 2 commits above it: the
      // reader can see neither before both have ended, and then sees both in one read.
      const client = await first.connect();
      await client.query("BEGIN");
      const below = Number((await insert(client, 1)).rows[0]!.x);
      await burnUntil(boundary);
      const above = Number((await insert(second, 2)).rows[0]!.x);
      await client.query("COMMIT");
      client.release();
      assert.ok(below < boundary && above >= boundary, `xids ${below} and ${above} straddle ${boundary}`);
      await second.query("SELECT pg_notify('switchyard_events', '')");
      await both;
      assert.deepEqual(seen, [1, 2]);
    } finally {
      await reader.close();
      await first.end();
      await second.end();
    }
  });

  // A server answering its first requests early opens the store before its runtime listens.
  it("keeps other nodes' commits for the first listener when they came before it", async () => {
    const url = freshUrl();
    const [writer, reader] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    const db = await postgresPool(url);
    try {
      writer.append({ type: "thread.created", threadId: "early", data: { thread: makeThread("early") } });
      await writer.flush();
      // Two of the reader's heartbeats after the commit: each is followed by a read of the feed,
      // which a notification may have started already.
      const { rows } = await db.query<{ now: Date }>("SELECT now()");
      const beatsAfter = async (): Promise<boolean> => {
        const beat = await db.query<{ at: Date }>("SELECT heartbeat_at AS at FROM nodes ORDER BY num DESC LIMIT 1");
        return beat.rows[0]!.at.getTime() - rows[0]!.now.getTime() > 1_000;
      };
      while (!(await beatsAfter())) await new Promise((resolve) => setTimeout(resolve, 100));
      const told = new Promise<string[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the commit made before anyone listened was never reported")), 5_000);
        reader.onCommit((events) => (clearTimeout(timer), resolve(events.map((e) => e.type))));
      });
      assert.deepEqual(await told, ["thread.created"]);
    } finally {
      await writer.close();
      await reader.close();
      await db.end();
    }
  });

  it("reports other nodes' deltas only of threads a client here follows; every other event always", async () => {
    const url = freshUrl();
    const [writer, reader] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    try {
      const seen: string[] = [];
      let reported = 0;
      let caughtUp: (() => void) | undefined;
      reader.onCommit((events) => {
        for (const e of events) seen.push(e.type === "item.delta" ? `delta:${e.data.delta}` : e.type);
        reported += events.length;
        if (seen.at(-1) === "thread.renamed") caughtUp?.();
      });
      // Each round ends with a rename, which the reader is always told of: then it has read the round.
      const round = async (delta: string): Promise<void> => {
        const read = new Promise<void>((resolve) => (caughtUp = resolve));
        writer.append({ type: "item.delta", threadId: "t1", data: { turnId: "u", itemId: "i", kind: "agentMessage", delta } });
        writer.append({ type: "thread.renamed", threadId: "t1", data: { displayName: delta } });
        await writer.flush();
        await read;
      };
      writer.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      await round("unfollowed");
      const release = reader.follow("t1");
      await round("followed");
      release();
      await round("released");
      assert.deepEqual(seen, ["thread.created", "thread.renamed", "delta:followed", "thread.renamed", "thread.renamed"]);
      assert.equal(reported, 5);
    } finally {
      await writer.close();
      await reader.close();
    }
  });

  it("keeps a thread's consecutive deltas of one item, committed together, as one row; every read sees each delta as appended", async () => {
    const url = freshUrl();
    const [writer, reader] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    const pool = await postgresPool(url);
    try {
      reader.follow("t1");
      const fed: RuntimeEvent[] = [];
      const completed = new Promise<void>((resolve) =>
        reader.onCommit((events) => {
          fed.push(...events);
          if (events.some((e) => e.type === "item.completed")) resolve();
        }),
      );
      const delta = (itemId: string, text: string) =>
        writer.append({ type: "item.delta", threadId: "t1", data: { turnId: "u1", itemId, kind: "agentMessage", delta: text } });
      const appended: RuntimeEvent[] = [
        writer.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } }),
        writer.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u1", "t1") } }),
        writer.append({ type: "item.started", threadId: "t1", data: { item: agentItem("i1", "t1", "u1", "") } }),
      ];
      // 300 deltas: a run holds at most 256. Then another item's, then the first's again.
      for (let i = 0; i < 300; i++) appended.push(delta("i1", `a${i} `));
      appended.push(delta("i2", "other"));
      for (const text of ["b", "c"]) appended.push(delta("i1", text));
      appended.push(writer.append({ type: "item.completed", threadId: "t1", data: { item: agentItem("i1", "t1", "u1", "done", true) } }));
      await writer.flush();
      await completed;

      const { rows } = await pool.query<{ seq: number; last_seq: number | null }>(
        "SELECT seq, last_seq FROM events WHERE thread_id = 't1' ORDER BY seq",
      );
      assert.deepEqual(
        rows.map((r) => [r.seq, r.last_seq]),
        [
          [1, null],
          [2, null],
          [3, null],
          [4, 259],
          [260, 303],
          [304, null],
          [305, 306],
          [307, null],
        ],
      );
      const json = (events: RuntimeEvent[]): unknown => JSON.parse(JSON.stringify(events));
      assert.deepEqual(json(fed), json(appended), "the other node's feed, each delta with its own time");
      for (const afterSeq of [0, 3, 4, 100, 258, 259, 260, 305, 306, 307]) {
        assert.deepEqual(json(await reader.eventsAfter("t1", afterSeq)), json(appended.slice(afterSeq)), `after ${afterSeq}`);
      }
      assert.deepEqual(json(await reader.eventsAfter("t1", 100, 5)), json(appended.slice(100, 105)));
      const each = await reader.eventsAfterEach([{ threadId: "t1", afterSeq: 257 }], 4);
      assert.deepEqual(json(each.get("t1")!), json(appended.slice(257, 261)));
      assert.equal(await reader.lastSeq("t1"), 307);
      const texts = appended.flatMap((e) => (e.type === "item.delta" && e.data.itemId === "i1" ? [e.data.delta] : []));
      assert.equal(await reader.deltasOf("i1"), texts.join(""));
    } finally {
      await pool.end();
      await writer.close();
      await reader.close();
    }
  });

  it("reads past pages of positions it does not want in one read, the events it wants in order", async () => {
    const url = freshUrl();
    const reader = await PostgresStore.open(url);
    const db = await postgresPool(url);
    try {
      const release = reader.follow("wanted");
      const seen: number[] = [];
      // Ten pages of the feed: a node that read one page a read would take nine of its reads
      // without a notification, a second apart, to see the last.
      const all = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the read stopped after ${seen.length} of 2,000 events`)), 5_000);
        reader.onCommit((events) => {
          for (const e of events) if (e.threadId === "wanted") seen.push(e.seq);
          if (seen.length < 2_000) return;
          clearTimeout(timer);
          resolve();
        });
      });
      // 20,000 positions, every tenth a delta of a thread the reader follows, between deltas of
      // one it does not: each page's last position is one it does not want.
      await db.query(
        `INSERT INTO events (thread_id, seq, type, ts, data)
         SELECT CASE WHEN p % 10 = 5 THEN 'wanted' ELSE 'unwanted' END, CASE WHEN p % 10 = 5 THEN (p + 5) / 10 ELSE p - (p + 5) / 10 END,
                'item.delta', now()::text, '{"turnId":"u","itemId":"i","kind":"agentMessage","delta":"x"}'
         FROM generate_series(1, 20000) p ORDER BY p`,
      );
      await db.query("SELECT pg_notify('switchyard_events', '')");
      await all;
      assert.deepEqual(
        seen,
        Array.from({ length: 2_000 }, (_, i) => i + 1),
      );
      release();
    } finally {
      await reader.close();
      await db.end();
    }
  });

  it("keeps face logs as SQLite does: appended in order, read after a seq, a fork refused", async () => {
    await onBothStores(async (store) => {
      const record = (seq: number, prevHash: string | null) => ({ seq, prevHash, hash: `h${seq}`, body: `{"n":${seq}}` });
      await store.appendToLog("run/a", [record(1, null), record(2, "h1")]);
      await store.appendToLog("run/a", [record(3, "h2")]);
      await store.appendToLog("run/b", [record(1, null)]);
      assert.deepEqual(await store.readLog("run/a", 1), [record(2, "h1"), record(3, "h2")]);
      assert.deepEqual(await store.readLog("run/b"), [record(1, null)]);
      // A second writer that read the same head: its event after h3 comes second (the same
      // seq), or after an event the log already follows (the same prev_hash).
      await assert.rejects(store.appendToLog("run/a", [{ ...record(3, "h2"), hash: "other" }]), LogConflictError);
      await assert.rejects(store.appendToLog("run/a", [{ ...record(9, "h2"), hash: "other" }]), LogConflictError);
      assert.equal((await store.readLog("run/a")).length, 3, "nothing of a refused batch is kept");
      await store.rebuild();
      assert.equal((await store.readLog("run/a")).length, 3, "not a projection: a rebuild keeps it");
    });
  });

  it("keeps face state as SQLite does: records with conditions, bounded queues taken in order", async () => {
    await onBothStores(async ({ faceState: state }) => {
      assert.equal(await state.putRecord("ns", "a", "1", { ifAbsent: true }), true);
      assert.equal(await state.putRecord("ns", "a", "2", { ifAbsent: true }), false, "taken");
      assert.equal(await state.putRecord("ns", "b", "3", { held: true }), true);
      assert.equal(await state.putRecord("ns", "a", "4", { ifHeldHere: true }), false, "a is held by nobody");
      assert.equal(await state.putRecord("ns", "b", "5"), true);
      assert.deepEqual(await state.listRecords("ns"), [
        { key: "a", value: "1", held: false },
        { key: "b", value: "5", held: true }, // a write without `held` keeps the hold
      ]);
      assert.equal(await state.putRecord("ns", "b", "6", { held: false, ifHeldHere: true }), true);
      assert.deepEqual(await state.getRecord("ns", "b"), { key: "b", value: "6", held: false });
      assert.equal(await state.putRecord("ns", "a", undefined), true);
      assert.equal(await state.getRecord("ns", "a"), undefined);

      // Past 3 messages the oldest droppable goes first; a kept one only when nothing else is left.
      const limits = { messages: 3, bytes: 1_000 };
      const add = (body: string, keep = false) => state.enqueue("q", body, { keep, limits });
      assert.deepEqual(await add("keep-1", true), { queued: 1, dropped: 0 });
      await add("m1");
      await add("m2");
      assert.deepEqual(await add("m3"), { queued: 3, dropped: 1 });
      assert.deepEqual(await state.takeQueued("q"), ["keep-1", "m2", "m3"]);
      assert.deepEqual(await state.takeQueued("q"), []);
      assert.deepEqual(await state.enqueue("q", "x".repeat(600), { keep: true, limits }), { queued: 1, dropped: 0 });
      assert.deepEqual(await state.enqueue("q", "y".repeat(600), { keep: true, limits }), { queued: 1, dropped: 1 });
      assert.deepEqual(await state.takeQueued("q"), ["y".repeat(600)]);
    });
  });

  it("drops as many of a full queue's oldest messages as a large one needs, droppable ones first", async () => {
    const limits = { messages: 100, bytes: 1_000 };
    await onBothStores(async ({ faceState: state }) => {
      const add = (queue: string, body: string, keep = false) => state.enqueue(queue, body, { keep, limits });
      const small = Array.from({ length: 90 }, (_, i) => `m${String(i).padStart(9, "0")}`); // 10 bytes each
      /** A kept message, 90 droppable ones, then a large kept one: 1,810 bytes. */
      const fill = async (queue: string) => {
        await add(queue, "k-00000001", true);
        for (const body of small) await add(queue, body);
        return add(queue, "b".repeat(900), true);
      };
      // 81 droppable messages go (more than one read's worth), the kept one stays.
      assert.deepEqual(await fill("q1"), { queued: 11, dropped: 81 });
      assert.deepEqual(await state.takeQueued("q1"), ["k-00000001", ...small.slice(81), "b".repeat(900)]);
      // Once nothing droppable is left, kept ones go, oldest first.
      assert.deepEqual(await fill("q2"), { queued: 11, dropped: 81 });
      assert.deepEqual(await add("q2", "c".repeat(950), true), { queued: 1, dropped: 11 });
      assert.deepEqual(await state.takeQueued("q2"), ["c".repeat(950)]);
    });
  });

  it("counts what a queue holds from the database when a store opens again", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "switchyard-store-"));
    const [url, olderUrl] = [freshUrl(), freshUrl()];
    /** How a store opens, and what happens to its database while it is closed. */
    const opens: Array<[() => Promise<Store>, (() => Promise<void>)?]> = [
      [async () => openStore(dir)],
      [() => PostgresStore.open(url)],
      // A database of schema version 10 kept no queue sizes: the migration counts them.
      [
        () => PostgresStore.open(olderUrl),
        async () => {
          const pool = await postgresPool(olderUrl);
          await pool.query(BACK_TO_VERSION_10);
          await pool.end();
        },
      ],
    ];
    const limits = { messages: 3, bytes: 1_000 };
    try {
      for (const [open, meanwhile] of opens) {
        const first = await open();
        await first.faceState.enqueue("q", "a", { keep: false, limits });
        await first.faceState.enqueue("q", "b", { keep: false, limits });
        await first.close();
        await meanwhile?.();
        const again = await open();
        try {
          assert.deepEqual(await again.faceState.enqueue("q", "c", { keep: false, limits }), { queued: 3, dropped: 0 });
          assert.deepEqual(await again.faceState.enqueue("q", "d", { keep: false, limits }), { queued: 3, dropped: 1 });
          assert.deepEqual(await again.faceState.takeQueued("q"), ["b", "c", "d"]);
        } finally {
          await again.close();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("shares face state between nodes: holds read live while their node is, broadcasts reach the others in order", async () => {
    const url = freshUrl();
    const [one, two] = [await PostgresStore.open(url), await PostgresStore.open(url)];
    try {
      const heard: string[] = [];
      let wake: () => void = () => undefined;
      two.faceState.onBroadcast("chat", (bodies) => {
        heard.push(...bodies);
        wake();
      });
      const mine: string[] = [];
      one.faceState.onBroadcast("chat", (bodies) => mine.push(...bodies));
      for (let i = 0; i < 5; i++) await one.faceState.broadcast("chat", [`a${i}`, `b${i}`]);
      while (heard.length < 10) await new Promise<void>((resolve) => (wake = resolve));
      assert.deepEqual(
        heard,
        [0, 1, 2, 3, 4].flatMap((i) => [`a${i}`, `b${i}`]),
      );
      assert.deepEqual(mine, [], "not to the sender");

      await one.faceState.putRecord("agents", "x", "{}", { held: true });
      assert.equal((await two.faceState.getRecord("agents", "x"))?.held, true);
      assert.equal(await two.faceState.putRecord("agents", "x", "{}", { held: false, ifHeldHere: true }), false, "not two's to let go");
      await one.close();
      assert.equal((await two.faceState.getRecord("agents", "x"))?.held, false, "its node left");
    } finally {
      await one.close();
      await two.close();
    }
  });

  it("ends a transaction a hung node left open once its lease has run out, so the other nodes' feed goes on", async () => {
    const url = freshUrl();
    const node = (): Promise<PostgresStore> => PostgresStore.open(url, { leaseTtlMs: 1_000 });
    const [writer, reader, hung] = [await node(), await node(), await node()];
    // The hung node's own connection, stopped inside a transaction that has an xid (a claim
    // between its statements): every node's feed reads only below it.
    const client = await (hung as unknown as { pool: Pool }).pool.connect();
    try {
      const ended = new Promise<unknown>((resolve) => client.once("error", resolve));
      await client.query("BEGIN");
      await client.query("SELECT pg_current_xact_id()");
      const told = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the feed stayed behind the open transaction")), 10_000);
        reader.onCommit((events) => events.some((e) => e.threadId === "after") && (clearTimeout(timer), resolve()));
      });
      writer.append({ type: "thread.created", threadId: "after", data: { thread: makeThread("after") } });
      await writer.flush();
      await told;
      assert.match(String(await ended), /idle-in-transaction timeout/);
    } finally {
      client.release(true);
      for (const store of [writer, reader, hung]) await store.close();
    }
  });

  it("reports another role's transaction that holds the feed back, whose age its session hides, once it has for 2 s, and its end", async () => {
    const url = freshUrl();
    const store = await PostgresStore.open(url);
    const admin = await postgresPool(url);
    // The holder and the watcher are two roles without privileges: neither sees the other's session whole.
    const [role, watcher] = [`report_${databases}`, `watcher_${databases}`];
    await admin.query(
      `CREATE ROLE ${role} LOGIN; CREATE ROLE ${watcher} LOGIN; GRANT USAGE ON SCHEMA public TO ${role}, ${watcher};
       GRANT INSERT ON face_records TO ${role}; GRANT SELECT ON events TO ${watcher}`,
    );
    await admin.end();
    const as = (user: string): Promise<Pool> => {
      const other = new URL(url);
      other.username = user;
      return postgresPool(other.toString());
    };
    const [theirs, watching] = [await as(role), await as(watcher)];
    const client = await theirs.connect();
    try {
      await client.query("BEGIN");
      await client.query("INSERT INTO face_records (ns, key, value) VALUES ('x', 'y', 'z')");
      const reports: string[] = [];
      const watch = new FeedHoldWatch(watching, (message) => reports.push(message));
      await watch.check(0);
      store.append({ type: "thread.created", threadId: "behind", data: { thread: makeThread("behind") } });
      await store.flush();
      assert.equal(
        await feedHolder(watching).then((holder) => holder?.openMs),
        undefined,
        "the age of another role's transaction is hidden",
      );
      await watch.check(1_000); // first seen holding it: nothing yet
      await watch.check(2_999);
      assert.deepEqual(reports, []);
      await watch.check(3_000);
      await watch.check(4_000);
      assert.equal(reports.length, 1, "reported once");
      assert.match(
        reports[0]!,
        new RegExp(
          `^The event feed is held back by transaction \\d+ \\(pid \\d+, user ${role}, database store\\d+, application switchyard [^)]+\\), seen holding it for 2\\.0 s: `,
        ),
      );
      assert.match(describeFeedHolder((await lastingFeedHolder(watching))!), new RegExp(`user ${role}`), "still the holder a second later");
      await client.query("COMMIT");
      await watch.check(4_500);
      assert.match(reports[1]!, /^The event feed moves again: transaction \d+ has ended \(it held the feed back for about 3\.5 s\)\.$/);
      assert.equal(await lastingFeedHolder(watching), undefined);
    } finally {
      client.release();
      await theirs.end();
      await watching.end();
      await store.close();
    }
  });

  it("names a prepared transaction left behind, which has no session, as what holds the feed back", async () => {
    const url = freshUrl();
    const store = await PostgresStore.open(url);
    const pool = await postgresPool(url);
    const name = `left_behind_${databases}`;
    try {
      const client = await pool.connect();
      await client.query("BEGIN");
      await client.query("INSERT INTO face_records (ns, key, value) VALUES ('x', 'y', 'z')");
      await client.query(`PREPARE TRANSACTION '${name}'`);
      client.release();
      store.append({ type: "thread.created", threadId: "behind", data: { thread: makeThread("behind") } });
      await store.flush();
      assert.equal(
        describeFeedHolder((await feedHolder(pool))!).replace(/\d+/, "N"),
        "transaction N (no session: a prepared transaction (pg_prepared_xacts))",
      );
      await pool.query(`COMMIT PREPARED '${name}'`);
      assert.equal(await feedHolder(pool), undefined);
    } finally {
      await pool.query(`ROLLBACK PREPARED '${name}'`).catch(() => undefined);
      await pool.end();
      await store.close();
    }
  });

  it("finds a commit whose answer was lost already applied: told once, not written again, and the thread goes on", async () => {
    const { store, proxy } = await storeThroughProxy(freshUrl());
    const told: number[] = [];
    store.onCommit((events) => told.push(...events.filter((e) => e.threadId === "lost").map((e) => e.seq)));
    const delta = (text: string) =>
      store.append({ type: "item.delta", threadId: "lost", data: { turnId: "u", itemId: "i", kind: "agentMessage", delta: text } });
    try {
      store.append({ type: "thread.created", threadId: "lost", data: { thread: makeThread("lost") } });
      await store.flush();
      proxy.loseNextAnswer();
      delta("applied, its answer lost");
      await assert.rejects(store.flush(), /cannot be written/);
      await eventually(async () => (told.includes(2) ? true : undefined), "the commit whose answer was lost to be told");
      delta("after");
      await store.flush();
      assert.deepEqual(told, [1, 2, 3]);
      assert.deepEqual(
        (await store.eventsAfter("lost", 0)).map((e) => (e.type === "item.delta" ? e.data.delta : e.type)),
        ["thread.created", "applied, its answer lost", "after"],
      );
    } finally {
      await store.close();
      proxy.close();
    }
  });

  it("finds a queue's enqueue or take whose answer was lost already applied: each message sent once", async () => {
    const url = freshUrl();
    const { store, proxy } = await storeThroughProxy(url);
    const pool = await postgresPool(url);
    const add = (body: string) => store.faceState.enqueue("q", body, { keep: false, limits: { messages: 10, bytes: 1_000 } });
    try {
      await add("a");
      await add("b");
      proxy.loseNextAnswer("face_queue_taken");
      await assert.rejects(store.faceState.takeQueued("q"), /cannot be reached/);
      assert.equal((await pool.query("SELECT 1 FROM face_queue")).rowCount, 0, "the take was committed");
      await add("c");
      assert.deepEqual(await store.faceState.takeQueued("q"), ["a", "b", "c"]);
      assert.deepEqual(await store.faceState.takeQueued("q"), []);
      // An enqueue whose answer was lost: found queued when it was, reported failed when not.
      proxy.loseNextAnswer("COMMIT\0", "answer");
      assert.deepEqual(await add("d"), { queued: 1, dropped: 0 });
      proxy.loseNextAnswer("INSERT INTO face_queue (");
      await assert.rejects(add("e"), /cannot be reached/);
      assert.deepEqual(await store.faceState.takeQueued("q"), ["d"]);
      // ... found taken when another relay took the queue before the look.
      const other = await PostgresStore.open(url);
      try {
        const took: string[] = [];
        proxy.loseNextAnswer("COMMIT\0", "answer", async () => took.push(...(await other.faceState.takeQueued("q"))));
        assert.deepEqual(await add("f"), { queued: 0, dropped: 0 });
        assert.deepEqual(took, ["f"]);
      } finally {
        await other.close();
      }
    } finally {
      await pool.end();
      await store.close();
      proxy.close();
    }
  });

  it("applies a forwarded command once when the answer to its forwarding, or to its owner's take of it, was lost", async () => {
    const url = freshUrl();
    const [owner, forwarder] = [await storeThroughProxy(url), await storeThroughProxy(url)];
    const applied: unknown[] = [];
    owner.store.onCommand(async (_threadId, command) => ({ applied: applied.push(command) }));
    try {
      owner.store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      owner.store.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u1", "t1") } });
      await owner.store.flush();
      forwarder.proxy.loseNextAnswer("INSERT INTO thread_commands");
      assert.deepEqual(await forwarder.store.forward("t1", { kind: "interrupt" }), { result: { applied: 1 } });
      // Cut before it reached the database: not there, so it failed (not "no turn runs elsewhere").
      forwarder.proxy.cutBefore("INSERT INTO thread_commands");
      await assert.rejects(forwarder.store.forward("t1", { kind: "interrupt" }), /cannot be reached/);
      owner.proxy.loseNextAnswer('"kind":"interrupt","turnId":"u1"', "answer"); // the owner's take of it
      assert.deepEqual(await forwarder.store.forward("t1", { kind: "interrupt", turnId: "u1" }), { result: { applied: 2 } });
      assert.deepEqual(applied, [{ kind: "interrupt" }, { kind: "interrupt", turnId: "u1" }]);
    } finally {
      for (const { store, proxy } of [owner, forwarder]) await store.close().finally(() => proxy.close());
    }
  });

  it("reads the rows of threads asked for at once in one query", async () => {
    const { store, proxy } = await storeThroughProxy(freshUrl());
    try {
      for (const id of ["t1", "t2", "t3"]) store.append({ type: "thread.created", threadId: id, data: { thread: makeThread(id) } });
      await store.flush();
      const reads = proxy.countQueries("FROM threads WHERE id");
      const threads = await Promise.all(["t1", "t2", "t1", "t3", "none"].map((id) => store.getThread(id)));
      assert.deepEqual(
        threads.map((thread) => thread?.id),
        ["t1", "t2", "t1", "t3", undefined],
      );
      assert.equal(reads(), 1);
    } finally {
      await store.close().finally(() => proxy.close());
    }
  });

  it("reads the items of turns asked for at once in one query, each caller its own", async () => {
    const { store, proxy } = await storeThroughProxy(freshUrl());
    try {
      populate(store);
      await store.flush();
      const expected = [await store.listItems("u1"), await store.listItems("u2"), await store.listItems("u3")];
      const reads = proxy.countQueries("FROM items WHERE turn_id");
      const lists = await Promise.all(["u1", "u2", "u1", "u3"].map((id) => store.listItems(id)));
      assert.deepEqual(lists, [expected[0], expected[1], expected[0], expected[2]]);
      assert.equal(reads(), 1);
      assert.notEqual(lists[0]![0], lists[2]![0], "the same turn's items are objects of each caller's");
    } finally {
      await store.close().finally(() => proxy.close());
    }
  });

  it("commits and reads the feed while every pooled connection waits for a read", async () => {
    const url = freshUrl();
    const [writer, reader] = [await storeThroughProxy(url), await storeThroughProxy(url)];
    const releases: Array<() => void> = [];
    try {
      writer.store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      await writer.store.flush();
      reader.store.follow("t1");
      const delta = new Promise<void>((resolve) =>
        reader.store.onCommit((events) => events.some((e) => e.type === "item.delta") && resolve()),
      );
      releases.push(writer.proxy.holdQueries("FROM turns WHERE status"), reader.proxy.holdQueries("FROM turns WHERE status"));
      // More reads than either pool has connections: all of them wait.
      const reads = [writer.store, reader.store].flatMap((store) => Array.from({ length: 6 }, () => store.listUnfinishedTurns()));
      writer.store.append({ type: "item.delta", threadId: "t1", data: { turnId: "u1", itemId: "i1", kind: "agentMessage", delta: "Hi" } });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("waited"), 10_000)));
      assert.equal(
        await Promise.race([
          writer.store
            .flush()
            .then(() => delta)
            .then(() => "delivered"),
          late,
        ]),
        "delivered",
      );
      clearTimeout(timer);
      for (const release of releases.splice(0)) release();
      assert.deepEqual(
        await Promise.all(reads),
        Array.from({ length: 12 }, () => []),
      );
    } finally {
      for (const release of releases) release();
      for (const { store, proxy } of [writer, reader]) await store.close().finally(() => proxy.close());
    }
  });

  it("finds nothing offered with one read, without the take's transaction", async () => {
    const { store, proxy } = await storeThroughProxy(freshUrl());
    try {
      proxy.cutBefore("DELETE FROM turn_queue"); // the take's first statement, were it sent
      assert.equal(await store.takeOfferedTurn(() => true), undefined);
    } finally {
      await store.close().finally(() => proxy.close());
    }
  });

  it("runs an offered turn once when the answer to offering it, taking it or withdrawing it was lost", async () => {
    const url = freshUrl();
    const [owner, taker] = [await storeThroughProxy(url), await storeThroughProxy(url)];
    const pool = await postgresPool(url);
    const offered = { threadId: "t1", turnId: "u1", workspacePath: "/w", params: { input: [{ type: "text" as const, text: "hi" }] } };
    try {
      owner.store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      owner.store.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u1", "t1") } });
      await owner.store.flush();
      owner.proxy.loseNextAnswer("INSERT INTO turn_queue");
      await owner.store.offerTurn(offered); // found made: not reported failed (its node would run the turn too)
      taker.proxy.loseNextAnswer("COMMIT\0", "answer");
      await assert.rejects(
        taker.store.takeOfferedTurn(() => true),
        /cannot be reached/,
      );
      assert.equal((await pool.query("SELECT 1 FROM turn_queue")).rowCount, 0, "the take was committed");
      assert.equal(await owner.store.withdrawTurn("u1"), false, "its node lets it go");
      assert.deepEqual(await taker.store.takeOfferedTurn(() => true), offered);
      taker.store.append({
        type: "item.delta",
        threadId: "t1",
        data: { turnId: "u1", itemId: "i", kind: "agentMessage", delta: "run here" },
      });
      await taker.store.flush();
      assert.equal(await taker.store.lastSeq("t1"), 3);
      // Its node withdraws an offer, the answer lost: found withdrawn, the turn runs there.
      owner.store.append({ type: "thread.created", threadId: "t2", data: { thread: makeThread("t2") } });
      owner.store.append({ type: "turn.started", threadId: "t2", data: { turn: makeTurn("u2", "t2") } });
      await owner.store.flush();
      await owner.store.offerTurn({ ...offered, threadId: "t2", turnId: "u2" });
      owner.proxy.loseNextAnswer("DELETE FROM turn_queue");
      assert.equal(await owner.store.withdrawTurn("u2"), true);
      assert.equal((await pool.query("SELECT 1 FROM turn_queue")).rowCount, 0);
    } finally {
      await pool.end();
      for (const { store, proxy } of [owner, taker]) await store.close().finally(() => proxy.close());
    }
  });

  it("finds a thread claimed when the answer to its claim was lost, and has what may run on it taken over", async () => {
    const url = freshUrl();
    const owner = await PostgresStore.open(url);
    const claimer = await storeThroughProxy(url);
    const pool = await postgresPool(url);
    let orphans = 0;
    claimer.store.onOrphans(() => orphans++);
    const epoch = async () => (await pool.query("SELECT epoch FROM thread_owners WHERE thread_id = 't1'")).rows[0]?.epoch as number;
    try {
      owner.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      await owner.flush();
      claimer.proxy.loseNextAnswer("COMMIT\0", "answer");
      await assert.rejects(claimer.store.acquire("t1"), /cannot be written/);
      assert.equal(await epoch(), 2, "the claim was committed");
      await eventually(async () => (orphans > 0 ? true : undefined), "a beat to find the thread claimed");
      assert.equal(await claimer.store.acquire("t1"), true);
      assert.equal(await epoch(), 2, "held already: not claimed again");
      claimer.store.append({ type: "thread.renamed", threadId: "t1", data: { displayName: "here" } });
      await claimer.store.flush();
      assert.equal((await claimer.store.getThread("t1"))?.displayName, "here");
    } finally {
      await pool.end();
      await owner.close();
      await claimer.store.close().finally(() => claimer.proxy.close());
    }
  });

  it("reads a turn after a commit of its thread that ended while the read was on its way", async () => {
    const { store, proxy } = await storeThroughProxy(freshUrl());
    try {
      store.append({ type: "thread.created", threadId: "t1", data: { thread: makeThread("t1") } });
      store.append({ type: "turn.started", threadId: "t1", data: { turn: makeTurn("u-read-race", "t1") } });
      await store.flush();
      // The turn ends (not committed yet) and is read at once: the read reaches the database
      // first, and its answer comes only after the turn's end has been committed.
      store.append({
        type: "turn.cancelled",
        threadId: "t1",
        data: { turnId: "u-read-race", completedAt: new Date().toISOString(), reason: "interrupted" },
      });
      const release = proxy.holdNextAnswer("u-read-race");
      const read = store.getTurn("u-read-race", { withItems: false });
      await store.flush();
      release();
      assert.equal((await read)?.status, "cancelled");
    } finally {
      await store.close();
      proxy.close();
    }
  });

  it("says the database is unavailable when it stops answering without failing, and available when it answers again", async () => {
    const { store, proxy } = await storeThroughProxy(freshUrl(), { leaseTtlMs: 2_000 });
    const statuses: StorageStatus[] = [];
    store.onStorageStatus((status) => statuses.push(status));
    try {
      proxy.stall();
      await eventually(async () => (statuses.length > 0 ? true : undefined), "the node to say the database is unavailable");
      assert.equal(statuses[0]!.available, false);
      assert.match(statuses[0]!.available ? "" : statuses[0]!.message, /has not answered for 1 s/);
      proxy.resume();
      await eventually(async () => (statuses.at(-1)?.available ? true : undefined), "the node to say it is available again");
    } finally {
      proxy.resume();
      await store.close();
      proxy.close();
    }
  });

  it("checks out a connection the database ends in the same read that completed it, without an uncaught error", async () => {
    const proxy = await endingProxy(server.port);
    const pool = await postgresPool(`postgres://postgres@127.0.0.1:${proxy.port}/postgres`);
    const heard: Error[] = [];
    try {
      // With `await pool.connect()` the error event had no listener: the test process died.
      const client = await checkout(pool, (error) => heard.push(error));
      await assert.rejects(client.query("SELECT 1"));
      assert.match(String(heard[0]), /administrator command/);
      client.release(true);
    } finally {
      await pool.end();
      proxy.close();
    }
  });

  it("outlives an idle pooled connection the database ends", async () => {
    const pool = await postgresPool(freshUrl());
    try {
      const { rows } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      assert.equal(pool.idleCount, 1);
      const admin = await postgresPool(server.url());
      await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
      await admin.end();
      // Without a listener the pool's 'error' event ended this process here.
      await eventually(async () => (pool.idleCount === 0 ? true : undefined), "the pool dropping the connection");
      assert.deepEqual((await pool.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it("refuses a database whose schema is newer than this binary", async () => {
    const url = freshUrl();
    await (await PostgresStore.open(url)).close();
    const pool = await postgresPool(url);
    await pool.query("UPDATE switchyard_schema SET version = $1", [POSTGRES_SCHEMA_VERSION + 1]);
    await pool.end();
    await assert.rejects(PostgresStore.open(url), /newer than this Switchyard supports/);
  });

  it("migrates a database only once every node on it has stopped", async () => {
    const url = freshUrl();
    const running = await PostgresStore.open(url);
    // As if it were a node of version 10, and this binary the next one.
    const pool = await postgresPool(url);
    await pool.query(BACK_TO_VERSION_10);
    try {
      await assert.rejects(
        PostgresStore.open(url),
        new RegExp(
          `A node runs on it with schema version 10 \\(\\S+:${process.pid}\\); stop every node before a newer Switchyard migrates it to version ${POSTGRES_SCHEMA_VERSION}`,
        ),
      );
      assert.deepEqual((await pool.query("SELECT version FROM switchyard_schema")).rows, [{ version: 10 }], "nothing migrated");
      await running.close();
      await (await PostgresStore.open(url)).close();
      assert.deepEqual((await pool.query("SELECT version FROM switchyard_schema")).rows, [{ version: POSTGRES_SCHEMA_VERSION }]);
    } finally {
      await pool.end();
    }
  });
});
