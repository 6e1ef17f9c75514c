// The PostgreSQL store's schema: versioned migrations, and the pool every connection comes from.
import type { ClientBase, Pool, PoolClient, QueryResult } from "pg";
import { CONNECTION_OPTIONS, DEFAULT_LEASE_TTL_MS, FEED_CHANNEL, nodeAlive } from "./postgres-node.js";
import { script, type Statement } from "./postgres-script.js";

// Schema. `switchyard_schema.version` is the number of migrations applied; a later version
// appends a step and never edits an earlier one.

/** The SQLSTATE a commit's epoch check (switchyard_append) fails with. */
export const FENCED = "SYF01";

/**
 * The advisory lock class of fence locks: (FENCE_LOCK_CLASS, node). A node's commits hold its
 * lock shared; a claim of one of its threads holds it exclusively.
 */
export const FENCE_LOCK_CLASS = 0x5377_7966;

/**
 * The start of switchyard_append's body (migrations 9 and 15): the writer's fence lock, shared,
 * and the epoch of every thread in the batch; one whose owner or epoch moved on fails it (FENCED,
 * the threads in its detail).
 */
const EPOCH_CHECK = `  PERFORM pg_advisory_xact_lock_shared(${FENCE_LOCK_CLASS}, p_writer);
  SELECT json_agg(c.thread_id)::text INTO lost FROM unnest(claimed_threads, claimed_epochs) AS c(thread_id, epoch)
  WHERE NOT EXISTS (SELECT 1 FROM thread_owners o WHERE o.thread_id = c.thread_id AND o.node = p_writer AND o.epoch = c.epoch);
  IF lost IS NOT NULL THEN
    RAISE EXCEPTION 'another node owns %', lost USING ERRCODE = '${FENCED}', DETAIL = lost;
  END IF;`;

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
  // 2: the cluster. Nodes hold an advisory lock while alive and beat their row; each thread has
  // one owner node and an epoch the owner's writes must match; every event says which node
  // wrote it, and (xid, gid) orders the feed other nodes read.
  `
CREATE TABLE nodes (
  num          SERIAL PRIMARY KEY,
  id           TEXT        NOT NULL UNIQUE,
  host         TEXT        NOT NULL,
  pid          INTEGER     NOT NULL,
  started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  stopped_at   TIMESTAMPTZ
);

CREATE TABLE thread_owners (
  thread_id  TEXT        PRIMARY KEY,
  node       INTEGER     NOT NULL,
  epoch      BIGINT      NOT NULL,
  claimed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX thread_owners_node ON thread_owners(node);

ALTER TABLE events ADD COLUMN writer INTEGER;
CREATE INDEX events_feed ON events(xid, gid);
`,
  // 3: commands (steer, interrupt) to a turn that another node runs; each applies once.
  `
CREATE TABLE thread_commands (
  id         TEXT        PRIMARY KEY,
  thread_id  TEXT        NOT NULL,
  command    TEXT        NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  applied_at TIMESTAMPTZ,
  result     TEXT
);
CREATE INDEX thread_commands_pending ON thread_commands(thread_id, created_at) WHERE applied_at IS NULL;
`,
  // 4: started turns waiting for a slot (--max-running-turns) on their node, offered to any node
  // with one free; a node takes one with FOR UPDATE SKIP LOCKED.
  `
CREATE TABLE turn_queue (
  turn_id        TEXT        PRIMARY KEY,
  thread_id      TEXT        NOT NULL,
  node           INTEGER     NOT NULL,
  workspace_path TEXT        NOT NULL,
  params         TEXT        NOT NULL,
  queued_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX turn_queue_order ON turn_queue(queued_at);
`,
  // 5: logs faces keep beside the threads (an AgentCompany run's events): one chain per log, a
  // prev_hash is followed once.
  `
CREATE TABLE face_logs (
  log       TEXT   NOT NULL,
  seq       BIGINT NOT NULL,
  prev_hash TEXT,
  hash      TEXT   NOT NULL,
  body      TEXT   NOT NULL,
  PRIMARY KEY (log, seq),
  UNIQUE (log, prev_hash)
);
`,
  // 6: records, queues and broadcasts faces share across nodes (the Yeaft relay's presence,
  // routes and away buffers; see postgres-face-state.ts).
  `
CREATE TABLE face_records (
  ns     TEXT    NOT NULL,
  key    TEXT    NOT NULL,
  value  TEXT    NOT NULL,
  holder INTEGER,
  PRIMARY KEY (ns, key)
);

CREATE TABLE face_queue (
  id    BIGSERIAL PRIMARY KEY,
  queue TEXT      NOT NULL,
  body  TEXT      NOT NULL,
  keep  BOOLEAN   NOT NULL,
  bytes INTEGER   NOT NULL
);
CREATE INDEX face_queue_order ON face_queue(queue, id);

CREATE TABLE face_broadcasts (
  xid     XID8        NOT NULL DEFAULT pg_current_xact_id(),
  id      BIGINT      GENERATED ALWAYS AS IDENTITY,
  node    INTEGER     NOT NULL,
  channel TEXT        NOT NULL,
  bodies  TEXT[]      NOT NULL,
  sent_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (xid, id)
);
`,
  // 7: the epoch check of a commit as one statement, so that a commit is one script, one round
  // trip (see PostgresStore.writeBatch): it holds the threads' owner rows until commit and fails
  // with FENCED, the threads another node owns now in its detail (a JSON array), when any epoch moved on.
  `
CREATE FUNCTION switchyard_fence(writer INTEGER, claimed_threads TEXT[], claimed_epochs BIGINT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  lost TEXT;
BEGIN
  WITH claimed AS (SELECT * FROM unnest(claimed_threads, claimed_epochs) AS c(thread_id, epoch)),
       held AS (
         SELECT o.thread_id FROM thread_owners o JOIN claimed c ON o.thread_id = c.thread_id AND o.epoch = c.epoch
         WHERE o.node = writer FOR SHARE OF o)
  SELECT json_agg(thread_id)::text INTO lost FROM claimed WHERE thread_id NOT IN (SELECT thread_id FROM held);
  IF lost IS NOT NULL THEN
    RAISE EXCEPTION 'another node owns %', lost USING ERRCODE = '${FENCED}', DETAIL = lost;
  END IF;
END $$;
`,
  // 8: a commit of events alone (no projection writes, no thread created: a run of deltas, most
  // commits) as one prepared call: planned once per connection, its values sent as parameters
  // rather than escaped into a script the server parses and plans on every commit.
  `
CREATE FUNCTION switchyard_append(p_writer INTEGER, claimed_threads TEXT[], claimed_epochs BIGINT[],
  p_thread_ids TEXT[], p_seqs BIGINT[], p_types TEXT[], p_ts TEXT[], p_data TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM switchyard_fence(p_writer, claimed_threads, claimed_epochs);
  INSERT INTO events (thread_id, seq, type, ts, data, writer)
    SELECT u.thread_id, u.seq, u.type, u.ts, u.data, p_writer FROM unnest(p_thread_ids, p_seqs, p_types, p_ts, p_data) AS u(thread_id, seq, type, ts, data);
  PERFORM pg_notify('${FEED_CHANNEL}', '');
END $$;
`,
  // 9: the epoch check without row locks, in switchyard_append, which every commit calls (a
  // commit with projection writes calls it in its script); switchyard_fence goes. Locking every
  // owner row of a batch (FOR SHARE) wrote each row again, with its WAL, on every commit: about
  // 150 µs of a commit of 60 threads. A commit holds its writer node's fence lock shared
  // instead; a claim takes the owner's exclusively before it moves the epoch on
  // (PostgresStore.claim), so it waits for the commits in flight, and a commit after it reads
  // the new epoch. Fails with FENCED, the threads whose owner or epoch moved on in its detail (a
  // JSON array). Nodes of an earlier version claim without the lock: a cluster is upgraded by
  // stopping all of its nodes.
  `
CREATE OR REPLACE FUNCTION switchyard_append(p_writer INTEGER, claimed_threads TEXT[], claimed_epochs BIGINT[],
  p_thread_ids TEXT[], p_seqs BIGINT[], p_types TEXT[], p_ts TEXT[], p_data TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  lost TEXT;
BEGIN
${EPOCH_CHECK}
  INSERT INTO events (thread_id, seq, type, ts, data, writer)
    SELECT u.thread_id, u.seq, u.type, u.ts, u.data, p_writer FROM unnest(p_thread_ids, p_seqs, p_types, p_ts, p_data) AS u(thread_id, seq, type, ts, data);
  PERFORM pg_notify('${FEED_CHANNEL}', '');
END $$;

DROP FUNCTION switchyard_fence(INTEGER, TEXT[], BIGINT[]);
`,
  // 10: a rebuild reads the log in feed order, (xid, gid), through events_feed; nothing else
  // used events_gid, which every insert kept up to date.
  `
DROP INDEX events_gid;
`,
  // 11: each face queue's size, kept by the writes that change it (under the queue's lock):
  // adding to a queue summed every message already in it.
  `
CREATE TABLE face_queue_sizes (
  queue TEXT    PRIMARY KEY,
  count INTEGER NOT NULL,
  bytes BIGINT  NOT NULL
);
INSERT INTO face_queue_sizes (queue, count, bytes) SELECT queue, count(*), sum(bytes) FROM face_queue GROUP BY queue;
`,
  // 12: writes whose answer was lost (the connection broke as they committed) are found again.
  // What each take of a face queue took, kept a while (PostgresFaceState.takeQueued): its
  // messages are then found only here. The claim that took a command (PostgresStore.serveCommands).
  // A queued message's token (PostgresFaceState.enqueue).
  `
CREATE TABLE face_queue_taken (
  token    TEXT        PRIMARY KEY,
  bodies   TEXT[]      NOT NULL,
  taken_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
ALTER TABLE thread_commands ADD COLUMN claim TEXT;
ALTER TABLE face_queue ADD COLUMN token TEXT;
`,
  // 13: the tokens of the messages a take took, so an enqueue whose answer was lost is found
  // even when a relay took its message before the look (PostgresFaceState.enqueue).
  `
ALTER TABLE face_queue_taken ADD COLUMN tokens TEXT[] NOT NULL DEFAULT '{}';
`,
  // 14: a commit is one call, switchyard_commit: it claims the threads the batch creates,
  // appends the events (switchyard_append) and makes the projection's writes (projection.ts,
  // as JSON). PL/pgSQL plans each of its statements once per connection; a commit sent as a
  // script of statements was parsed and planned again every time (with 200 turns starting,
  // the projection's inserts cost more to plan than to run). A CASE that finds no branch
  // raises: a write this version does not know fails the commit.
  `
CREATE FUNCTION switchyard_project(p_writes JSONB) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  w JSONB;
BEGIN
  FOR w IN SELECT value FROM jsonb_array_elements(p_writes) LOOP
    CASE w->>'op'
    WHEN 'insertThread' THEN
      INSERT INTO threads SELECT * FROM jsonb_populate_record(NULL::threads, w->'row')
      ON CONFLICT (id) DO UPDATE SET
        workspace_path = excluded.workspace_path, user_id = excluded.user_id, origin_channel = excluded.origin_channel,
        channel_context = excluded.channel_context, display_name = excluded.display_name, status = excluded.status,
        created_at = excluded.created_at, last_active_at = excluded.last_active_at, history_mode = excluded.history_mode,
        mode = excluded.mode, configuration = excluded.configuration, metadata = excluded.metadata,
        queued_inputs = excluded.queued_inputs, plan = excluded.plan, forked_from = excluded.forked_from,
        backend_session = excluded.backend_session;
    WHEN 'setThread' THEN
      CASE w->>'column'
      WHEN 'last_active_at' THEN UPDATE threads SET last_active_at = w->>'value' WHERE id = w->>'threadId';
      WHEN 'display_name' THEN UPDATE threads SET display_name = w->>'value' WHERE id = w->>'threadId';
      WHEN 'configuration' THEN UPDATE threads SET configuration = w->>'value' WHERE id = w->>'threadId';
      WHEN 'mode' THEN UPDATE threads SET mode = w->>'value' WHERE id = w->>'threadId';
      WHEN 'status' THEN UPDATE threads SET status = w->>'value' WHERE id = w->>'threadId';
      WHEN 'backend_session' THEN UPDATE threads SET backend_session = w->>'value' WHERE id = w->>'threadId';
      WHEN 'queued_inputs' THEN UPDATE threads SET queued_inputs = w->>'value' WHERE id = w->>'threadId';
      WHEN 'plan' THEN UPDATE threads SET plan = w->>'value' WHERE id = w->>'threadId';
      END CASE;
    WHEN 'touchThread' THEN
      UPDATE threads SET last_active_at = greatest(last_active_at, w->>'at') WHERE id = w->>'threadId';
    WHEN 'deleteThread' THEN
      DELETE FROM items WHERE thread_id = w->>'threadId';
      DELETE FROM turns WHERE thread_id = w->>'threadId';
      DELETE FROM threads WHERE id = w->>'threadId';
    WHEN 'insertTurn' THEN
      INSERT INTO turns (id, thread_id, seq, status, started_at, completed_at, token_usage, error, input, model)
      SELECT r.id, r.thread_id, r.seq, r.status, r.started_at, r.completed_at, r.token_usage, r.error, r.input, r.model
      FROM jsonb_populate_record(NULL::turns, w->'row') r WHERE EXISTS (SELECT 1 FROM threads WHERE id = r.thread_id)
      ON CONFLICT (id) DO NOTHING;
    WHEN 'finishTurn' THEN
      UPDATE turns SET status = w->>'status', completed_at = w->>'completedAt', token_usage = coalesce(w->>'tokenUsage', token_usage),
        error = w->>'error', cancel_reason = w->>'cancelReason'
      WHERE id = w->>'turnId';
    WHEN 'setTurn' THEN
      CASE w->>'column'
      WHEN 'diff' THEN UPDATE turns SET diff = w->>'value' WHERE id = w->>'turnId';
      WHEN 'token_usage' THEN UPDATE turns SET token_usage = w->>'value' WHERE id = w->>'turnId';
      END CASE;
    WHEN 'putItem' THEN
      -- An existing item gets the new data only when the write replaces it.
      INSERT INTO items SELECT * FROM jsonb_populate_record(NULL::items, w->'row') r WHERE EXISTS (SELECT 1 FROM threads WHERE id = r.thread_id)
      ON CONFLICT (id) DO UPDATE SET data = excluded.data WHERE (w->>'replace')::boolean;
    WHEN 'insertRule' THEN
      INSERT INTO approval_rules (workspace_path, scope_key) VALUES (w->>'workspacePath', w->>'scopeKey') ON CONFLICT DO NOTHING;
    END CASE;
  END LOOP;
END $$;

CREATE FUNCTION switchyard_commit(p_writer INTEGER, p_created TEXT[], claimed_threads TEXT[], claimed_epochs BIGINT[],
  p_thread_ids TEXT[], p_seqs BIGINT[], p_types TEXT[], p_ts TEXT[], p_data TEXT[], p_writes JSONB) RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO thread_owners (thread_id, node, epoch) SELECT unnest(p_created), p_writer, 1 ON CONFLICT DO NOTHING;
  PERFORM switchyard_append(p_writer, claimed_threads, claimed_epochs, p_thread_ids, p_seqs, p_types, p_ts, p_data);
  PERFORM switchyard_project(p_writes);
END $$;
`,
  // 15: a thread's consecutive deltas of one item committed together are one row, a run
  // (postgres-runs.ts): `last_seq` is its last event's seq. switchyard_append and
  // switchyard_commit take the rows' last seqs.
  `
ALTER TABLE events ADD COLUMN last_seq BIGINT;
DROP FUNCTION switchyard_commit(INTEGER, TEXT[], TEXT[], BIGINT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], JSONB);
DROP FUNCTION switchyard_append(INTEGER, TEXT[], BIGINT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[]);

CREATE FUNCTION switchyard_append(p_writer INTEGER, claimed_threads TEXT[], claimed_epochs BIGINT[],
  p_thread_ids TEXT[], p_seqs BIGINT[], p_last_seqs BIGINT[], p_types TEXT[], p_ts TEXT[], p_data TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  lost TEXT;
BEGIN
${EPOCH_CHECK}
  INSERT INTO events (thread_id, seq, last_seq, type, ts, data, writer)
    SELECT u.thread_id, u.seq, u.last_seq, u.type, u.ts, u.data, p_writer
    FROM unnest(p_thread_ids, p_seqs, p_last_seqs, p_types, p_ts, p_data) AS u(thread_id, seq, last_seq, type, ts, data);
  PERFORM pg_notify('${FEED_CHANNEL}', '');
END $$;

CREATE FUNCTION switchyard_commit(p_writer INTEGER, p_created TEXT[], claimed_threads TEXT[], claimed_epochs BIGINT[],
  p_thread_ids TEXT[], p_seqs BIGINT[], p_last_seqs BIGINT[], p_types TEXT[], p_ts TEXT[], p_data TEXT[], p_writes JSONB) RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO thread_owners (thread_id, node, epoch) SELECT unnest(p_created), p_writer, 1 ON CONFLICT DO NOTHING;
  PERFORM switchyard_append(p_writer, claimed_threads, claimed_epochs, p_thread_ids, p_seqs, p_last_seqs, p_types, p_ts, p_data);
  PERFORM switchyard_project(p_writes);
END $$;
`,
];

/** The schema version this binary writes. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** Any two processes migrating at once take turns on this advisory lock. */
const MIGRATION_LOCK = 0x5377_7964; // "Swyd"

/** Applies the migrations this database lacks; refuses one newer than this binary. Returns the versions before and after. */
export async function migratePostgres(pool: Pool): Promise<{ from: number; to: number }> {
  // A connection that breaks meanwhile fails the query in flight, which reports it.
  const client = await checkout(pool, () => undefined);
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS switchyard_schema (version INTEGER NOT NULL)");
    const { rows } = await client.query<{ version: number }>("SELECT version FROM switchyard_schema");
    const current = rows[0]?.version ?? 0;
    if (current > MIGRATIONS.length) {
      throw new Error(`The database has Switchyard schema version ${current}, newer than this Switchyard supports (${MIGRATIONS.length}).`);
    }
    if (current >= CLUSTER_VERSION && current < MIGRATIONS.length) await refuseWhileNodesRun(client, current);
    for (let version = current; version < MIGRATIONS.length; version++) await client.query(MIGRATIONS[version]!);
    if (rows.length === 0) await client.query("INSERT INTO switchyard_schema (version) VALUES ($1)", [MIGRATIONS.length]);
    else await client.query("UPDATE switchyard_schema SET version = $1", [MIGRATIONS.length]);
    await client.query("COMMIT");
    return { from: current, to: MIGRATIONS.length };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** The version that made the database a cluster's (migration 2: the nodes table). */
const CLUSTER_VERSION = 2;

/**
 * Nodes of different schema versions must not run together (a migration changes what every
 * node reads and writes): a database is migrated only once every node on it has stopped.
 */
async function refuseWhileNodesRun(client: PoolClient, current: number): Promise<void> {
  const { rows } = await client.query<{ host: string; pid: number }>(
    `SELECT host, pid FROM nodes WHERE ${nodeAlive("nodes.num", DEFAULT_LEASE_TTL_MS)} ORDER BY num`,
  );
  if (rows.length === 0) return;
  const nodes = rows.map((r) => `${r.host}:${r.pid}`).join(", ");
  throw new Error(
    `${rows.length === 1 ? "A node runs" : `${rows.length} nodes run`} on it with schema version ${current} (${nodes}); ` +
      `stop every node before a newer Switchyard migrates it to version ${MIGRATIONS.length} (docs/cluster.md, "Upgrading").`,
  );
}

/**
 * A pooled connection that has `onError` as its 'error' listener from the moment the pool hands
 * it over. The pool hands a new connection over from inside the socket read that completed it;
 * `await pool.connect()` resumes only after the rest of that read, and an error message in it
 * (the database shutting down: "terminating connection due to administrator command") was an
 * 'error' event with no listener, which ended the process.
 */
export function checkout(pool: Pool, onError: (error: Error) => void): Promise<PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (error || !client) return reject(error ?? new Error("The pool gave no connection"));
      if (client.listenerCount("error") === 0) client.on("error", onError);
      resolve(client);
    });
  });
}

/**
 * A pool whose BIGINT columns read as numbers (seq, gid stay far below 2^53).
 *
 * With `idleInTransactionMs`, the database ends a connection of the pool that sits in an open
 * transaction that long without a statement: the process hung (stopped, frozen, a long pause)
 * between two statements of a transaction. Such a transaction holds back every node's feed (it
 * reads only below the oldest transaction still open) and the locks it took, until it ends.
 * Set per connection with SET, not a startup option: PgBouncer in session mode refuses those.
 */
export async function postgresPool(url: string, opts: { idleInTransactionMs?: number; max?: number } = {}): Promise<Pool> {
  const pg = (await import("pg")).default;
  const { idleInTransactionMs, max = 4 } = opts;
  const pool = new pg.Pool({
    connectionString: url,
    max,
    ...CONNECTION_OPTIONS,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") => (oid === 20 ? Number : pg.types.getTypeParser(oid, format))) as never,
    },
    // Before the connection is handed out; a failure fails the checkout.
    ...(idleInTransactionMs === undefined
      ? {}
      : {
          onConnect: async (client: ClientBase) => {
            await client.query(`SET idle_in_transaction_session_timeout = ${Math.round(idleInTransactionMs)}`);
          },
        }),
  });
  // An idle connection that broke (the database restarted): the pool drops it, and the next
  // query reports the database if it stays gone. Without a listener, the pool's 'error' event
  // ended the process (a command migrating, a store before it listens).
  pool.on("error", () => undefined);
  return pool;
}

/**
 * Runs `work` in a transaction on a connection from `connect`: committed when it returns, rolled
 * back when it throws (the connection then dropped: it may be what failed). Rejects with what
 * failed, as it failed.
 */
export async function inTransaction<T>(
  connect: () => Promise<PoolClient>,
  work: (client: PoolClient, results: QueryResult[]) => Promise<T>,
  /** Statements sent with BEGIN, in its round trip; `work` gets their results. */
  first: Statement[] = [],
): Promise<T> {
  const client = await connect();
  try {
    const begun = (await client.query(first.length > 0 ? `BEGIN;\n${script(first)}` : "BEGIN")) as unknown as QueryResult | QueryResult[];
    const result = await work(client, Array.isArray(begun) ? begun.slice(1) : []);
    await client.query("COMMIT");
    client.release();
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    client.release(true);
    throw error;
  }
}
