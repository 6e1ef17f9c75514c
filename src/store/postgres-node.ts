// This process as one node of a cluster on a PostgreSQL store. A node is alive while it holds
// its advisory lock (on a connection of its own, so the lock goes when the process dies) and
// beats its row within the lease TTL (so a node that hangs loses it too). The same connection
// LISTENs for the one notification each commit sends; a timer polls as a backstop, so a missed
// notification only delays the feed. The node also notices peers that are gone, at once when
// one leaves (it notifies), else at its next look (every second).
import os from "node:os";
import type { Client, Pool } from "pg";
import { newId } from "../ids.js";
import { prepared } from "./postgres-prepared.js";

/** The advisory lock class of node liveness locks: pg_advisory_lock(NODE_LOCK_CLASS, num). */
const NODE_LOCK_CLASS = 0x5377_7964; // "Swyd"
export const FEED_CHANNEL = "switchyard_events";
/** Commands forwarded to a thread's owner, and their answers. */
export const COMMAND_CHANNEL = "switchyard_commands";
/** A node offered a turn waiting for a slot. */
export const TURN_CHANNEL = "switchyard_turns";
/** A node left the cluster (it stopped): its running turns wait for another. */
const NODE_CHANNEL = "switchyard_nodes";
export const DEFAULT_LEASE_TTL_MS = 10_000;
/** What every connection of this process is opened with, the pool's and the lock's. */
export const CONNECTION_OPTIONS = {
  /** How they show in pg_stat_activity (and in a report of what holds the feed back). */
  application_name: `switchyard ${os.hostname()}:${process.pid}`,
  // A probe after 10 s idle, not the system's 2 hours: a NAT or load balancer between node and
  // database that forgets idle connections (AWS's after 350 s) never sees one idle that long.
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
};
/** How often the feed is polled without a notification, and peers are checked. */
const TICK_MS = 1_000;

/**
 * SQL: whether the node numbered by `num` (an expression of the enclosing query) is alive. The
 * subquery's own names are ones no caller uses: an `n.num` of the caller's would otherwise mean
 * this query's row, and the test would say whether any node at all is alive.
 */
export function nodeAlive(num: string, ttlMs: number): string {
  return `EXISTS (
    SELECT 1 FROM nodes alive_node JOIN pg_locks alive_lock
      ON alive_lock.locktype = 'advisory' AND alive_lock.classid = ${NODE_LOCK_CLASS} AND alive_lock.objid = alive_node.num::oid
     AND alive_lock.objsubid = 2 AND alive_lock.granted
     AND alive_lock.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    WHERE alive_node.num = ${num} AND alive_node.stopped_at IS NULL
      AND alive_node.heartbeat_at > now() - interval '${Math.round(ttlMs)} milliseconds')`;
}

export interface NodeEvents {
  /** The feed may have new events (a notification, or the poll). */
  onFeed(): void;
  /** A command, or a command's answer, may be waiting (a notification, or the poll). */
  onCommands(): void;
  /** A turn may be waiting for a node with a free slot (a notification, or the poll). */
  onTurnOffered(): void;
  /** Turns of a peer that is gone are unfinished: their threads can be claimed. */
  onPeerGone(): void;
  /** The database answered a beat. */
  onBeat(): void;
  /** The beat failed: the database may be unreachable, even while nothing else is being written. */
  onBeatFailed(err: unknown): void;
  onError(err: unknown): void;
}

export class PostgresNode {
  private tick: NodeJS.Timeout | undefined;
  private closed = false;

  /** Whether the lock connection broke (the lock went with it); the next beat reconnects. */
  private broken = false;

  private constructor(
    private readonly pool: Pool,
    private readonly url: string,
    private control: Client,
    readonly num: number,
    readonly id: string,
    readonly leaseTtlMs: number,
    private readonly events: NodeEvents,
  ) {}

  /** Registers the node, takes its lock on a dedicated connection, and starts listening. */
  static async join(pool: Pool, url: string, leaseTtlMs: number, events: NodeEvents): Promise<PostgresNode> {
    const id = newId("node");
    // The lock first, then the row: a peer that sees the row must see the node alive.
    const { rows } = await pool.query<{ num: number }>("SELECT nextval(pg_get_serial_sequence('nodes', 'num'))::int AS num");
    const num = rows[0]!.num;
    const control = await PostgresNode.lock(url, num);
    await pool.query("INSERT INTO nodes (num, id, host, pid) VALUES ($1, $2, $3, $4)", [num, id, os.hostname(), process.pid]);
    const node = new PostgresNode(pool, url, control, num, id, leaseTtlMs, events);
    node.watch();
    node.schedule();
    return node;
  }

  private static async lock(url: string, num: number): Promise<Client> {
    const pg = (await import("pg")).default;
    const control = new pg.Client({ connectionString: url, ...CONNECTION_OPTIONS });
    // Until watch() takes over: a connection that breaks while it is set up fails the calls below.
    const early = (): void => undefined;
    control.on("error", early);
    await control.connect().catch(async (error: unknown) => {
      await control.end().catch(() => undefined);
      throw error;
    });
    await control.query("SELECT pg_advisory_lock($1, $2)", [NODE_LOCK_CLASS, num]);
    await control.query(`LISTEN ${FEED_CHANNEL}; LISTEN ${COMMAND_CHANNEL}; LISTEN ${TURN_CHANNEL}; LISTEN ${NODE_CHANNEL}`);
    return control;
  }

  private watch(): void {
    this.control.removeAllListeners("error");
    this.control.on("notification", (message) => {
      switch (message.channel) {
        case FEED_CHANNEL:
          return this.events.onFeed();
        case TURN_CHANNEL:
          return this.events.onTurnOffered();
        case NODE_CHANNEL:
          if (!this.closed) void this.lookForOrphans();
          return;
        default:
          return this.events.onCommands();
      }
    });
    // The lock went with the connection (the database restarted, the network broke): the next
    // beat takes it again. Meanwhile peers may find this node gone and take its running threads;
    // its commits to those are then refused (fenced), so it need not let go of anything here.
    this.control.on("error", (err) => {
      if (this.closed || this.broken) return;
      this.broken = true;
      this.events.onError(err);
    });
  }

  private schedule(): void {
    this.tick = setTimeout(() => {
      void this.beat().finally(() => {
        if (!this.closed) this.schedule();
      });
    }, TICK_MS);
    this.tick.unref();
  }

  /** Renews the lease, reads the feed, and looks for peers that are gone. */
  private async beat(): Promise<void> {
    // A database that stops answering without refusing (a network that drops packets) fails no
    // query for many minutes (TCP retransmits): a beat unanswered for half the lease says so.
    const silentMs = this.leaseTtlMs / 2;
    const silence = setTimeout(
      () => this.events.onBeatFailed(new Error(`The database has not answered for ${(silentMs / 1000).toFixed(0)} s.`)),
      silentMs,
    );
    silence.unref();
    try {
      if (this.broken) {
        this.control = await PostgresNode.lock(this.url, this.num);
        this.broken = false;
        this.watch();
      }
      const renewed = await this.pool.query(
        prepared("UPDATE nodes SET heartbeat_at = now() WHERE num = $1 AND stopped_at IS NULL", [this.num]),
      );
      if (renewed.rowCount === 0 && !this.closed) {
        // Peers found this node gone (it hung past the TTL) and took over its running threads,
        // which fences its writes to them: it comes back as a live node.
        await this.pool.query(prepared("UPDATE nodes SET stopped_at = NULL, heartbeat_at = now() WHERE num = $1", [this.num]));
      }
      this.events.onBeat();
      this.events.onFeed();
      this.events.onCommands();
      this.events.onTurnOffered();
      const gone = await this.pool.query<{ num: number }>(
        prepared(
          `UPDATE nodes SET stopped_at = now() WHERE stopped_at IS NULL AND num <> $1 AND NOT ${nodeAlive("nodes.num", this.leaseTtlMs)}
         RETURNING num`,
          [this.num],
        ),
      );
      if (gone.rows.length > 0) await this.endLockSessions(gone.rows.map((row) => row.num));
      await this.lookForOrphans();
    } catch (error) {
      this.events.onBeatFailed(error);
    } finally {
      clearTimeout(silence);
    }
  }

  /**
   * Ends the lock connections of peers found gone that still hold their lock: they hang (their
   * lease lapsed). Until then such a connection keeps its lock and, as a listener that reads
   * nothing, every notification since in PostgreSQL's queue. A peer that resumes finds the
   * connection broken and takes its lock again at its next beat, as after a database restart.
   */
  private async endLockSessions(nums: number[]): Promise<void> {
    await this.pool
      .query(
        `SELECT pg_terminate_backend(l.pid) FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.classid = ${NODE_LOCK_CLASS} AND l.objid = ANY ($1::oid[]) AND l.objsubid = 2 AND l.granted
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [nums],
      )
      .catch((error: unknown) => this.events.onError(error)); // not allowed (another role's): the lease still fences it
  }

  /**
   * Reports running turns whose node is gone. Every node looks (not only the one that marked the
   * peer gone): the threads may be in a workspace only some nodes reach.
   */
  private async lookForOrphans(): Promise<void> {
    try {
      const { rows } = await this.pool.query<{ orphans: boolean }>(
        prepared(
          `SELECT EXISTS (
           SELECT 1 FROM turns t JOIN thread_owners o ON o.thread_id = t.thread_id
           WHERE t.status IN ('running', 'waitingApproval') AND o.node <> $1 AND NOT ${nodeAlive("o.node", this.leaseTtlMs)}) AS orphans`,
          [this.num],
        ),
      );
      if (rows[0]?.orphans) this.events.onPeerGone();
    } catch (error) {
      this.events.onError(error);
    }
  }

  /** Leaves the cluster: peers see this node gone at once, and look for turns it handed over. */
  async leave(): Promise<void> {
    this.closed = true;
    clearTimeout(this.tick);
    await this.pool.query("UPDATE nodes SET stopped_at = now() WHERE num = $1", [this.num]).catch(() => undefined);
    await this.pool.query(`NOTIFY ${NODE_CHANNEL}`).catch(() => undefined);
    await this.control.end().catch(() => undefined);
  }
}
