// How events become rows of the PostgreSQL `events` table, and rows events again. A thread's
// consecutive deltas of one item committed together are one row, a *run*: `seq` is its first
// event's, `last_seq` its last's, `ts` their times joined by commas and `data` a JSON array of
// their data. Every other event is a row of its own (`last_seq` NULL).
//
// Why: a busy node's commits follow each other 15-45 ms apart, so each carries two or three
// deltas of every thread streaming at 12 ms a delta. Every row costs the database its insert
// (15 µs, with two indexes) and each node's feed a position to read (4 µs); a run is one.
import type { RuntimeEvent } from "../domain/events.js";
import { arrayInput } from "./postgres-script.js";
import { parse, type EventRow } from "./rows.js";

/** The most events a run holds: a read from a seq looks back at most this far for the run holding it. */
export const MAX_RUN = 256;

/** A row as read: a run when `last_seq` is set. */
export type LogRow = EventRow & { last_seq: number | null };

/** An event to write, with its data as JSON. */
export interface EventToWrite {
  event: RuntimeEvent;
  data: string;
}

/** A batch's rows as columns (thread ids, seqs, last seqs, types, times, data), each an array parameter in its input form. */
export function rowColumns(batch: readonly EventToWrite[]): string[] {
  const rows = {
    threadIds: [] as string[],
    seqs: [] as number[],
    lastSeqs: [] as Array<number | null>,
    types: [] as string[],
    ts: [] as string[],
    data: [] as string[],
  };
  type Run = { row: number; itemId: string; ts: string[]; data: string[] };
  const runs: Run[] = [];
  /** Per thread, the run its next delta may join. */
  const open = new Map<string, Run>();
  for (const { event, data } of batch) {
    const itemId = event.type === "item.delta" ? event.data.itemId : undefined;
    const run = open.get(event.threadId);
    if (run && run.itemId === itemId && rows.seqs[run.row]! + run.data.length === event.seq && run.data.length < MAX_RUN) {
      run.ts.push(event.ts);
      run.data.push(data);
      continue;
    }
    const row = rows.threadIds.push(event.threadId) - 1;
    rows.seqs.push(event.seq);
    rows.lastSeqs.push(null);
    rows.types.push(event.type);
    rows.ts.push(event.ts);
    rows.data.push(data);
    if (itemId === undefined) {
      open.delete(event.threadId);
      continue;
    }
    const started: Run = { row, itemId, ts: [event.ts], data: [data] };
    runs.push(started);
    open.set(event.threadId, started);
  }
  for (const run of runs) {
    if (run.data.length === 1) continue; // a delta alone is a row as any event
    rows.lastSeqs[run.row] = rows.seqs[run.row]! + run.data.length - 1;
    rows.ts[run.row] = run.ts.join(",");
    rows.data[run.row] = `[${run.data.join(",")}]`;
  }
  return [rows.threadIds, rows.seqs, rows.lastSeqs, rows.types, rows.ts, rows.data].map(arrayInput);
}

/** The events a row holds. */
export function eventsOfRow(row: LogRow): RuntimeEvent[] {
  const event = (seq: number, ts: string, data: unknown): RuntimeEvent =>
    ({ seq, threadId: row.thread_id, type: row.type, ts, data }) as RuntimeEvent;
  if (row.last_seq === null) return [event(row.seq, row.ts, parse<unknown>(row.data))];
  const data = parse<unknown[]>(row.data);
  const ts = row.ts.split(",");
  return data.map((d, i) => event(row.seq + i, ts[i]!, d));
}

/** The events after `afterSeq` of rows read from it (the first may be a run that starts before it), at most `limit`. */
export function eventsAfterSeq(rows: readonly LogRow[], afterSeq: number, limit: number): RuntimeEvent[] {
  const events: RuntimeEvent[] = [];
  for (const row of rows) {
    for (const event of eventsOfRow(row)) if (event.seq > afterSeq && events.length < limit) events.push(event);
  }
  return events;
}
