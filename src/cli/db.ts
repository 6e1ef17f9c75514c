// The PostgreSQL store's commands: `switchyard db migrate` brings its schema to this binary's
// version; `switchyard cluster status` shows the nodes that share it.
import type { Pool } from "pg";
import { migratePostgres, postgresPool } from "../store/postgres-schema.js";
import { describeDatabase, isPostgresUrl } from "../store/postgres-url.js";
import { DEFAULT_LEASE_TTL_MS, nodeAlive } from "../store/postgres-node.js";
import { describeFeedHolder, HELD_BACK, lastingFeedHolder } from "../store/feed-holder.js";

/**
 * Runs a command against the database `url` names: a clear message and exit code 1 when there is
 * none, it cannot be reached, or `work` fails.
 */
async function withDatabase(
  command: string,
  url: string | undefined,
  print: (line: string) => void,
  work: (pool: Pool) => Promise<void>,
): Promise<number> {
  if (!url || !isPostgresUrl(url)) {
    print(`switchyard ${command}: give the database as --store postgres://… (or SWITCHYARD_DATABASE_URL).`);
    return 1;
  }
  const pool = await postgresPool(url);
  try {
    await work(pool);
    return 0;
  } catch (error) {
    print(`switchyard ${command}: the database at ${describeDatabase(url)}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await pool.end();
  }
}

export function runDbMigrate(url: string | undefined, print: (line: string) => void): Promise<number> {
  return withDatabase("db migrate", url, print, async (pool) => {
    const { from, to } = await migratePostgres(pool);
    print(from === to ? `schema version ${to}: already up to date` : `schema version ${from} → ${to}: migrated`);
  });
}

interface NodeStatus {
  num: number;
  id: string;
  host: string;
  pid: number;
  alive: boolean;
  startedAt: string;
  heartbeatAgeMs: number;
  stoppedAt: string | null;
  threads: number;
  runningTurns: number;
  /** Turns started on the node that wait for a slot (--max-running-turns) on any node. */
  waitingTurns: number;
}

/** `switchyard cluster status`: the nodes on the database, whether each is alive, what it owns. */
export function runClusterStatus(url: string | undefined, opts: { json?: boolean }, print: (line: string) => void): Promise<number> {
  return withDatabase("cluster status", url, print, async (pool) => {
    const { rows } = await pool.query<NodeStatus>(
      `SELECT n.num, n.id, n.host, n.pid, ${nodeAlive("n.num", DEFAULT_LEASE_TTL_MS)} AS alive,
              to_char(n.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS "startedAt",
              (extract(epoch FROM now() - n.heartbeat_at) * 1000)::int AS "heartbeatAgeMs",
              n.stopped_at::text AS "stoppedAt",
              (SELECT count(*) FROM thread_owners o WHERE o.node = n.num)::int AS threads,
              (SELECT count(*) FROM thread_owners o JOIN turns t ON t.thread_id = o.thread_id
                WHERE o.node = n.num AND t.status IN ('running', 'waitingApproval'))::int AS "runningTurns",
              (SELECT count(*) FROM turn_queue q WHERE q.node = n.num)::int AS "waitingTurns"
       FROM nodes n
       WHERE n.stopped_at IS NULL OR EXISTS (SELECT 1 FROM thread_owners o WHERE o.node = n.num)
          OR EXISTS (SELECT 1 FROM turn_queue q WHERE q.node = n.num)
       ORDER BY n.num`,
    );
    const feedHeldBy = rows.length > 0 ? await lastingFeedHolder(pool) : undefined;
    if (opts.json) return print(JSON.stringify({ nodes: rows, ...(feedHeldBy ? { feedHeldBy } : {}) }, null, 2));
    if (rows.length === 0) {
      const { rows: past } = await pool.query<{ stopped: number }>("SELECT count(*)::int AS stopped FROM nodes");
      const stopped = past[0]?.stopped ?? 0;
      return print(
        stopped === 0
          ? "No nodes: no Switchyard server has used this database yet."
          : stopped === 1
            ? "No nodes running: the one server that used this database has stopped and holds no threads."
            : `No nodes running: the ${stopped} servers that used this database have stopped and hold no threads.`,
      );
    }
    const table = [
      ["NODE", "HOST", "PID", "ALIVE", "STARTED", "HEARTBEAT", "THREADS", "RUNNING", "WAITING"],
      ...rows.map((n) => [
        n.id,
        n.host,
        String(n.pid),
        n.alive ? "yes" : n.stoppedAt ? "stopped" : "no",
        n.startedAt,
        `${(n.heartbeatAgeMs / 1000).toFixed(1)} s ago`,
        String(n.threads),
        String(n.runningTurns),
        String(n.waitingTurns),
      ]),
    ];
    const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
    for (const row of table)
      print(
        row
          .map((cell, c) => cell.padEnd(widths[c]!))
          .join("  ")
          .trimEnd(),
      );
    if (feedHeldBy) {
      print(`\nThe event feed is held back by ${describeFeedHolder(feedHeldBy)}:`);
      print(HELD_BACK);
    }
  });
}
