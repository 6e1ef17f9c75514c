// Event subscriptions: live run events for a connection, filtered, after a backfill from the
// index with no gap and no duplicate between the two. An acknowledged position is kept in the
// workspace (`.local/subscriptions/<id>.json`), so re-subscribing with the same id, after a
// disconnect or a restart, delivers every event after it.
import { EventEmitter } from "node:events";
import path from "node:path";
import { z } from "zod";
import { AppError } from "./errors.js";
import { readYaml, writeYaml } from "./files.js";
import type { WorkspaceIndex } from "./index-db.js";
import type { EventEnvelope } from "./run-log.js";
import { layout } from "./workspace.js";

export interface AppendedEvent {
  workspace_dir: string;
  project_id: string;
  run_id: string;
  seq: number;
  event: EventEnvelope;
}

/** Every event appended by this server, as it is appended. */
export class EventBus extends EventEmitter<{ event: [AppendedEvent] }> {}

export interface SubscriptionFilter {
  workspace_dir?: string;
  project_id?: string;
  run_id?: string;
  event_types?: string[];
}

const AckFile = z.object({ subscription_id: z.string(), last_ack_ts_monotonic_ms: z.number() });
const ackFile = (ws: string, id: string): string => path.join(layout.local(ws), "subscriptions", `${encodeURIComponent(id)}.yaml`);

export function matches(filter: SubscriptionFilter, e: Omit<AppendedEvent, "event"> & { event: { type: string } }): boolean {
  return (
    (filter.workspace_dir === undefined || filter.workspace_dir === e.workspace_dir) &&
    (filter.project_id === undefined || filter.project_id === e.project_id) &&
    (filter.run_id === undefined || filter.run_id === e.run_id) &&
    (filter.event_types === undefined || filter.event_types.includes(e.event.type))
  );
}

interface Subscription {
  filter: SubscriptionFilter;
  detach: () => void;
}

/** One connection's subscriptions. */
export class Subscriptions {
  private readonly subs = new Map<string, Subscription>();

  constructor(
    private readonly bus: EventBus,
    private readonly notify: (subscriptionId: string, e: AppendedEvent) => void,
  ) {}

  subscribe(
    id: string,
    filter: SubscriptionFilter,
    opts: { backfillLimit?: number; index?: WorkspaceIndex },
  ): { subscription_id: string; backfilled: number; resumed_after_ts?: number } {
    this.unsubscribe(id);
    const ws = filter.workspace_dir;
    const acked = ws ? AckFile.safeParse(readYaml(ackFile(ws, id))) : undefined;
    const resumeAfter = acked?.success ? acked.data.last_ack_ts_monotonic_ms : undefined;
    // Live events wait while the backfill is sent, then go out unless the backfill had them.
    let buffering = true;
    const buffered: AppendedEvent[] = [];
    const onEvent = (e: AppendedEvent): void => {
      if (!matches(filter, e)) return;
      if (buffering) buffered.push(e);
      else this.notify(id, e);
    };
    this.bus.on("event", onEvent);
    this.subs.set(id, { filter, detach: () => this.bus.off("event", onEvent) });

    const sent = new Set<string>();
    if (ws && opts.index && (resumeAfter !== undefined || opts.backfillLimit)) {
      opts.index.sync();
      const query = { ...filter, ...(filter.event_types ? { types: filter.event_types } : {}) };
      const rows =
        resumeAfter !== undefined
          ? opts.index.listEvents({ ...query, after_ts: resumeAfter, limit: 100_000, order: "asc" })
          : opts.index.listEvents({ ...query, limit: opts.backfillLimit!, order: "desc" }).reverse();
      for (const row of rows) {
        sent.add(`${row.project_id}/${row.run_id}/${row.seq}`);
        this.notify(id, { workspace_dir: ws, project_id: row.project_id, run_id: row.run_id, seq: row.seq, event: row.event });
      }
    }
    buffering = false;
    for (const e of buffered) if (!sent.has(`${e.project_id}/${e.run_id}/${e.seq}`)) this.notify(id, e);
    return { subscription_id: id, backfilled: sent.size, ...(resumeAfter !== undefined ? { resumed_after_ts: resumeAfter } : {}) };
  }

  ack(id: string, ts: number | undefined): void {
    const sub = this.subs.get(id);
    if (!sub) throw new AppError("SUBSCRIPTION_NOT_FOUND", `No subscription ${id} on this connection.`, { subscription_id: id });
    if (ts !== undefined && sub.filter.workspace_dir)
      writeYaml(ackFile(sub.filter.workspace_dir, id), { subscription_id: id, last_ack_ts_monotonic_ms: ts });
  }

  unsubscribe(id: string): boolean {
    const sub = this.subs.get(id);
    sub?.detach();
    return this.subs.delete(id);
  }

  close(): void {
    for (const id of [...this.subs.keys()]) this.unsubscribe(id);
  }
}
