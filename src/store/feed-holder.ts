// What holds the event feed back. A node reads another node's events only once every
// transaction older than them has ended (the feed reads below the oldest open transaction:
// postgres-store.ts), so one transaction left open anywhere on the database server (a psql
// session, a report, a process that hung) stops cross-node delivery with no error anywhere.
// This finds that transaction, so that each node says so in its log, and `switchyard cluster
// status` shows it.
import type { Pool } from "pg";

/** How long a transaction holds the feed back before it is reported. Switchyard's own last milliseconds. */
export const FEED_HOLD_REPORT_MS = 2_000;

/** The oldest open transaction, while committed events wait behind it. What another role's session hides is absent. */
export interface FeedHolder {
  xid: string;
  pid?: number;
  user?: string;
  database?: string;
  application?: string;
  /** "idle in transaction", "active", …: hidden for another role's session. */
  state?: string;
  /** How long the transaction has been open: hidden for another role's session. */
  openMs?: number;
}

interface HolderRow {
  xid: string;
  pid: number | null;
  user: string | null;
  database: string | null;
  application: string | null;
  state: string | null;
  openMs: number | null;
}

/** The transaction holding the feed back now, if committed events wait behind it. */
export async function feedHolder(pool: Pool): Promise<FeedHolder | undefined> {
  // A prepared (two-phase) transaction holds it back too, with no session: only its xid is known.
  const { rows } = await pool.query<HolderRow>(
    `WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
     SELECT h.xmin::text AS xid, a.pid, a.usename AS "user", a.datname AS database,
            NULLIF(a.application_name, '') AS application, a.state,
            (extract(epoch FROM now() - a.xact_start) * 1000)::int AS "openMs"
     FROM horizon h LEFT JOIN pg_stat_activity a ON a.backend_xid = h.xmin::xid
     WHERE EXISTS (SELECT 1 FROM events WHERE xid >= h.xmin)`,
  );
  const row = rows[0];
  if (!row) return undefined;
  const holder: FeedHolder = { xid: row.xid };
  for (const key of ["pid", "user", "database", "application", "state", "openMs"] as const) {
    const value = row[key];
    if (value !== null) Object.assign(holder, { [key]: value });
  }
  return holder;
}

/**
 * The transaction holding the feed back, if it has for FEED_HOLD_REPORT_MS: by its age where the
 * session shows it, else if the same transaction still holds it after another look a second later.
 */
export async function lastingFeedHolder(pool: Pool): Promise<FeedHolder | undefined> {
  const holder = await feedHolder(pool);
  if (!holder) return undefined;
  if (holder.openMs !== undefined) return holder.openMs >= FEED_HOLD_REPORT_MS ? holder : undefined;
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const again = await feedHolder(pool);
  return again?.xid === holder.xid ? again : undefined;
}

/** "transaction 812 (pid 4121, user report, database app, application psql, idle in transaction, open 12.0 s)". */
export function describeFeedHolder(holder: FeedHolder): string {
  const facts = [
    holder.pid !== undefined && `pid ${holder.pid}`,
    holder.user && `user ${holder.user}`,
    holder.database && `database ${holder.database}`,
    holder.application && `application ${holder.application}`,
    holder.state,
    holder.openMs !== undefined && `open ${seconds(holder.openMs)}`,
  ].filter((fact): fact is string => typeof fact === "string" && fact !== "");
  if (holder.pid === undefined) facts.push("no session: a prepared transaction (pg_prepared_xacts)");
  return `transaction ${holder.xid} (${facts.join(", ")})`;
}

/**
 * Looks at the feed's horizon (at each beat) and reports a transaction that has held it back
 * for FEED_HOLD_REPORT_MS, once, and again when the feed moves on.
 */
export class FeedHoldWatch {
  private held: { xid: string; since: number; reported: boolean } | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly report: (message: string) => void,
  ) {}

  async check(now = performance.now()): Promise<void> {
    const holder = await feedHolder(this.pool);
    const held = this.held;
    if (holder && held?.xid === holder.xid) {
      const heldMs = now - held.since;
      if (!held.reported && heldMs >= FEED_HOLD_REPORT_MS) {
        held.reported = true;
        const seen = holder.openMs === undefined ? `, seen holding it for ${seconds(heldMs)}` : "";
        this.report(`The event feed is held back by ${describeFeedHolder(holder)}${seen}: ${HELD_BACK}`);
      }
      return;
    }
    if (held?.reported)
      this.report(
        `The event feed moves again: transaction ${held.xid} has ended (it held the feed back for about ${seconds(now - held.since)}).`,
      );
    // Since the transaction began, where its session shows it: one open long already is reported at once.
    this.held = holder && { xid: holder.xid, since: now - (holder.openMs ?? 0), reported: false };
  }
}

/** What a held-back feed means, as the node's log and `cluster status` say it. */
export const HELD_BACK = "other nodes' clients get no event committed after it began until it ends.";

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
