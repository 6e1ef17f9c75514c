// `.local/index.sqlite`: a cache of the workspace's runs and events, never the truth.
// rebuild() recreates it from the files alone; sync() indexes only the lines appended to each
// run's events.jsonl since (seq = line number) and forgets runs that are gone.
import { closeSync, mkdirSync, openSync, readSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { parseLine, type EventEnvelope } from "./run-log.js";
import { eventsFile, readRun } from "./runs.js";
import { layout, subdirs } from "./workspace.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  project_id TEXT NOT NULL, run_id TEXT NOT NULL, created_at TEXT NOT NULL, status TEXT NOT NULL,
  provider TEXT NOT NULL, agent_id TEXT NOT NULL, events_relpath TEXT NOT NULL,
  PRIMARY KEY (project_id, run_id));
CREATE TABLE IF NOT EXISTS events (
  project_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
  ts_wallclock TEXT NOT NULL, ts_monotonic_ms INTEGER NOT NULL, actor TEXT NOT NULL, session_ref TEXT NOT NULL,
  visibility TEXT NOT NULL, payload_json TEXT NOT NULL, raw_json TEXT NOT NULL,
  PRIMARY KEY (project_id, run_id, seq));
CREATE INDEX IF NOT EXISTS events_by_time ON events (ts_monotonic_ms, project_id, run_id, seq);
CREATE TABLE IF NOT EXISTS run_files (
  project_id TEXT NOT NULL, run_id TEXT NOT NULL, yaml_mtime REAL NOT NULL, bytes INTEGER NOT NULL, lines INTEGER NOT NULL,
  PRIMARY KEY (project_id, run_id));
CREATE TABLE IF NOT EXISTS event_parse_errors (
  project_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL, error TEXT NOT NULL, raw_line TEXT NOT NULL,
  PRIMARY KEY (project_id, run_id, seq));
`;

export interface IndexedEvent {
  project_id: string;
  run_id: string;
  seq: number;
  type: string;
  ts_monotonic_ms: number;
  event: EventEnvelope;
}

export class WorkspaceIndex {
  private db: Database.Database;

  constructor(private readonly ws: string) {
    this.db = WorkspaceIndex.open(ws);
  }

  private static open(ws: string): Database.Database {
    const file = layout.index(ws);
    mkdirSync(path.dirname(file), { recursive: true });
    const db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.exec(SCHEMA);
    return db;
  }

  /** Drops the index file and indexes every run from the files. */
  rebuild(): { runs: number; events: number; parse_errors: number } {
    this.db.close();
    const file = layout.index(this.ws);
    for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
    this.db = WorkspaceIndex.open(this.ws);
    const added = this.sync();
    return { ...added, parse_errors: added.parse_errors + this.indexTornTails() };
  }

  /**
   * Indexes what was appended since the last sync; returns what it added. Each run's log is
   * read from the byte where the last sync stopped (only whole lines: a line still being
   * written waits), and its run.yaml only when it changed, so a sync costs what was appended.
   */
  sync(): { runs: number; events: number; parse_errors: number } {
    const added = { runs: 0, events: 0, parse_errors: 0 };
    const files = new Map(
      this.db
        .prepare<[], { project_id: string; run_id: string; yaml_mtime: number; bytes: number; lines: number }>("SELECT * FROM run_files")
        .all()
        .map((f) => [`${f.project_id}/${f.run_id}`, f]),
    );
    const upsertRun = this.db.prepare(
      "INSERT INTO runs VALUES (@project_id, @id, @created_at, @status, @provider, @agent_id, @events_relpath) ON CONFLICT (project_id, run_id) DO UPDATE SET status = excluded.status",
    );
    const upsertFile = this.db.prepare("INSERT OR REPLACE INTO run_files VALUES (?, ?, ?, ?, ?)");
    const insertEvent = this.db.prepare("INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const insertError = this.db.prepare("INSERT OR IGNORE INTO event_parse_errors VALUES (?, ?, ?, ?, ?)");
    const forget = (projectId: string, runId: string, tables: string[]): void => {
      for (const table of tables) this.db.prepare(`DELETE FROM ${table} WHERE project_id = ? AND run_id = ?`).run(projectId, runId);
    };
    this.db.transaction(() => {
      for (const projectId of subdirs(layout.projects(this.ws))) {
        for (const runId of subdirs(layout.runs(this.ws, projectId))) {
          const key = `${projectId}/${runId}`;
          const known = files.get(key);
          files.delete(key);
          const yamlMtime = mtimeOf(path.join(layout.run(this.ws, projectId, runId), "run.yaml"));
          if (yamlMtime === undefined) continue; // not a run (yet)
          if (!known || known.yaml_mtime !== yamlMtime) {
            let run;
            try {
              run = readRun(this.ws, projectId, runId);
            } catch {
              continue;
            }
            upsertRun.run(run);
            if (!known) added.runs++;
          }
          const log = eventsFile(this.ws, projectId, runId);
          let { bytes, lines } = known ?? { bytes: 0, lines: 0 };
          const size = sizeOf(log);
          if (size < bytes) {
            // Rewritten, not appended to: index it again from the start.
            forget(projectId, runId, ["events", "event_parse_errors"]);
            bytes = 0;
            lines = 0;
          }
          if (size > bytes) {
            const text = readRange(log, bytes, size);
            const whole = text.lastIndexOf("\n") + 1;
            for (const raw of text.slice(0, whole).split("\n").slice(0, -1)) {
              lines++;
              if (raw.trim() === "") continue;
              const line = parseLine(raw, lines);
              if (line.event) {
                const e = line.event;
                insertEvent.run(
                  projectId,
                  runId,
                  lines,
                  e.type,
                  e.ts_wallclock,
                  e.ts_monotonic_ms,
                  e.actor,
                  e.session_ref,
                  e.visibility,
                  JSON.stringify(e.payload),
                  raw,
                );
                added.events++;
              } else {
                insertError.run(projectId, runId, lines, line.error ?? "unreadable", raw);
                added.parse_errors++;
              }
            }
            bytes += Buffer.byteLength(text.slice(0, whole));
          }
          upsertFile.run(projectId, runId, yamlMtime, bytes, lines);
        }
      }
      // Runs whose files are gone.
      for (const gone of files.values()) forget(gone.project_id, gone.run_id, ["runs", "events", "event_parse_errors", "run_files"]);
    })();
    return added;
  }

  /** A full rebuild also indexes a torn last line (a crash's), which sync leaves to finish. */
  private indexTornTails(): number {
    let count = 0;
    for (const f of this.db
      .prepare<[], { project_id: string; run_id: string; bytes: number; lines: number }>("SELECT * FROM run_files")
      .all()) {
      const log = eventsFile(this.ws, f.project_id, f.run_id);
      const size = sizeOf(log);
      if (size <= f.bytes) continue;
      const raw = readRange(log, f.bytes, size);
      this.db
        .prepare("INSERT OR IGNORE INTO event_parse_errors VALUES (?, ?, ?, ?, ?)")
        .run(f.project_id, f.run_id, f.lines + 1, parseLine(raw, f.lines + 1).error ?? "torn line", raw);
      count++;
    }
    return count;
  }

  stats(): { runs: number; events: number; event_parse_errors: number } {
    const count = (table: string): number => this.db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()!.n;
    return { runs: count("runs"), events: count("events"), event_parse_errors: count("event_parse_errors") };
  }

  listRuns(projectId?: string, limit = 200): Array<Record<string, unknown>> {
    return this.db
      .prepare<[{ project: string | null; limit: number }], Record<string, unknown>>(
        "SELECT * FROM runs WHERE (@project IS NULL OR project_id = @project) ORDER BY created_at DESC, run_id DESC LIMIT @limit",
      )
      .all({ project: projectId ?? null, limit });
  }

  /** Events in the order of the clock (then run and line); the envelope as persisted. */
  listEvents(filter: {
    project_id?: string;
    run_id?: string;
    types?: string[];
    after_ts?: number;
    since_seq?: number;
    limit: number;
    order: "asc" | "desc";
  }): IndexedEvent[] {
    const rows = this.db
      .prepare<
        [Record<string, string | number | null>],
        { project_id: string; run_id: string; seq: number; type: string; ts_monotonic_ms: number; raw_json: string }
      >(
        `SELECT project_id, run_id, seq, type, ts_monotonic_ms, raw_json FROM events
         WHERE (@project IS NULL OR project_id = @project) AND (@run IS NULL OR run_id = @run)
           AND (@after_ts IS NULL OR ts_monotonic_ms > @after_ts) AND (@since_seq IS NULL OR seq > @since_seq)
           AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
         ORDER BY ts_monotonic_ms ${filter.order === "desc" ? "DESC" : "ASC"}, project_id, run_id, seq LIMIT @limit`,
      )
      .all({
        project: filter.project_id ?? null,
        run: filter.run_id ?? null,
        after_ts: filter.after_ts ?? null,
        since_seq: filter.since_seq ?? null,
        types: filter.types ? JSON.stringify(filter.types) : null,
        limit: filter.limit,
      });
    return rows.map((r) => ({
      project_id: r.project_id,
      run_id: r.run_id,
      seq: r.seq,
      type: r.type,
      ts_monotonic_ms: r.ts_monotonic_ms,
      event: JSON.parse(r.raw_json) as EventEnvelope,
    }));
  }

  /** Per run: its last event and how many events of some kinds it has, for the monitor. */
  runSummaries(projectId?: string, limit = 200): Array<Record<string, unknown>> {
    return this.db
      .prepare<[{ project: string | null; limit: number }], Record<string, unknown>>(
        `SELECT r.*,
           (SELECT json_object('seq', e.seq, 'type', e.type, 'ts_wallclock', e.ts_wallclock, 'actor', e.actor, 'visibility', e.visibility)
              FROM events e WHERE e.project_id = r.project_id AND e.run_id = r.run_id ORDER BY e.seq DESC LIMIT 1) AS last_event,
           (SELECT count(*) FROM event_parse_errors p WHERE p.project_id = r.project_id AND p.run_id = r.run_id) AS parse_error_count,
           (SELECT count(*) FROM events e WHERE e.project_id = r.project_id AND e.run_id = r.run_id AND e.type = 'policy.decision') AS policy_decision_count,
           (SELECT count(*) FROM events e WHERE e.project_id = r.project_id AND e.run_id = r.run_id AND e.type = 'policy.denied') AS policy_denied_count,
           (SELECT e.payload_json FROM events e WHERE e.project_id = r.project_id AND e.run_id = r.run_id AND e.type = 'usage.reported' ORDER BY e.seq DESC LIMIT 1) AS usage_json
         FROM runs r WHERE (@project IS NULL OR r.project_id = @project) ORDER BY r.created_at DESC, r.run_id DESC LIMIT @limit`,
      )
      .all({ project: projectId ?? null, limit })
      .map((row) => {
        const { last_event, usage_json, ...rest } = row as { last_event: string | null; usage_json: string | null };
        return {
          ...rest,
          last_event: last_event ? (JSON.parse(last_event) as unknown) : null,
          token_usage: usage_json ? (JSON.parse(usage_json) as unknown) : null,
        };
      });
  }

  listParseErrors(limit = 200): Array<Record<string, unknown>> {
    return this.db
      .prepare<[number], Record<string, unknown>>("SELECT * FROM event_parse_errors ORDER BY project_id, run_id, seq LIMIT ?")
      .all(limit);
  }

  close(): void {
    this.db.close();
  }
}

function mtimeOf(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readRange(file: string, from: number, to: number): string {
  const buffer = Buffer.alloc(to - from);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  return buffer.toString("utf8");
}
