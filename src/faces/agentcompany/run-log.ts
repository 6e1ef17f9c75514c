// A run's events.jsonl: append-only, one envelope per line, a SHA-256 hash chain per file
// (each event names the hash of the one before). Reading never fails on a torn or edited line:
// it becomes a parse error at its line number (the line number is the event's seq).
// The writer computes the chain once and keeps each line twice: in the file and, as a record
// with its hash and the previous one, in the server's store (a face log: PostgreSQL in a
// cluster), which refuses a second event after the same one. run.replay verifies both.
import { createHash } from "node:crypto";
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import type { Logger } from "../../log.js";
import type { RuntimeApi } from "../../runtime/api.js";
import type { LogRecord } from "../../store/store.js";
import { newId } from "./files.js";

/** Where a run's log is kept besides its file: the server's store, and a logger for its failures. */
export interface RunLogStore {
  logs: RuntimeApi["logs"];
  log: Logger;
}

/** The name of a run's log in the store. */
export const storedLogName = (runId: string): string => `agentcompany/run/${runId}`;

export const Visibility = z.enum(["private_agent", "team", "managers", "org"]);

export const EventEnvelope = z.object({
  schema_version: z.literal(1),
  event_id: z.string(),
  correlation_id: z.string().nullable(),
  causation_id: z.string().nullable(),
  ts_wallclock: z.string(),
  ts_monotonic_ms: z.number(),
  run_id: z.string(),
  session_ref: z.string(),
  actor: z.string(),
  visibility: Visibility,
  type: z.string(),
  payload: z.record(z.string(), z.unknown()),
  prev_event_hash: z.string().nullable(),
  event_hash: z.string(),
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;

export interface NewRunEvent {
  type: string;
  payload: Record<string, unknown>;
  actor?: string;
  visibility?: z.infer<typeof Visibility>;
  causation_id?: string | null;
}

/** The hash of an envelope: SHA-256 of its JSON without event_hash. */
export function hashOf(envelope: Omit<EventEnvelope, "event_hash"> & { event_hash?: string }): string {
  const { event_hash: _ignored, ...rest } = envelope;
  return createHash("sha256").update(JSON.stringify(rest)).digest("hex");
}

export interface ReadLine {
  seq: number;
  event?: EventEnvelope;
  raw: string;
  error?: string;
}

/** Every line of the file with its seq (1-based line number); blank lines are skipped. */
export function readRunLog(file: string): ReadLine[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, "utf8").split("\n");
  return lines.flatMap((raw, i) => (raw.trim() === "" ? [] : [parseLine(raw, i + 1)]));
}

/** One line of a log: its event, or why it is not one. */
export function parseLine(raw: string, seq: number): ReadLine {
  try {
    const parsed = EventEnvelope.safeParse(JSON.parse(raw));
    if (parsed.success) return { seq, event: parsed.data, raw };
    const issue = parsed.error.issues[0];
    return { seq, raw, error: `not an event envelope: ${issue?.path.join(".")}: ${issue?.message}` };
  } catch (error) {
    return { seq, raw, error: `invalid JSON: ${(error as Error).message}` };
  }
}

/** Checks the chain: each event's hash and its link to the previous valid event. */
export function verifyChain(lines: ReadLine[]): { ok: boolean; checked: number; first_broken?: { seq: number; reason: string } } {
  let prev: string | null = null;
  let checked = 0;
  for (const line of lines) {
    if (!line.event) return { ok: false, checked, first_broken: { seq: line.seq, reason: line.error ?? "unreadable line" } };
    if (hashOf(line.event) !== line.event.event_hash)
      return { ok: false, checked, first_broken: { seq: line.seq, reason: "event_hash does not match the event" } };
    if (line.event.prev_event_hash !== prev) {
      return { ok: false, checked, first_broken: { seq: line.seq, reason: "prev_event_hash does not name the previous event" } };
    }
    prev = line.event.event_hash;
    checked++;
  }
  return { ok: true, checked };
}

/** A line of the file as the store keeps it. */
function toRecord(line: ReadLine): LogRecord[] {
  return line.event ? [{ seq: line.seq, prevHash: line.event.prev_event_hash, hash: line.event.event_hash, body: line.raw }] : [];
}

/**
 * Checks the store's copy of a run's log: its own chain, and that it holds the events of the
 * file, at the same seqs with the same hashes. A run the store has no copy of (its log was
 * written before the store kept one) is checked on the file alone.
 */
export function verifyStoredCopy(stored: LogRecord[], fileLines: ReadLine[]): { seq: number; reason: string } | undefined {
  if (stored.length === 0) return undefined;
  const chain = verifyChain(stored.map((r) => parseLine(r.body, r.seq)));
  if (!chain.ok) return { seq: chain.first_broken!.seq, reason: `the store's copy: ${chain.first_broken!.reason}` };
  const inFile = fileLines.flatMap(toRecord);
  for (let i = 0; i < Math.max(inFile.length, stored.length); i++) {
    const [file, copy] = [inFile[i], stored[i]];
    if (file?.seq !== copy?.seq || file?.hash !== copy?.hash) {
      return {
        seq: file?.seq ?? copy!.seq,
        reason: copy ? "the store's copy differs from events.jsonl here" : "the store's copy lacks this event of events.jsonl",
      };
    }
  }
  return undefined;
}

/** Appends events to one run's log, chaining each to the last valid event of the file. */
export class RunLog {
  private lastHash: string | null | undefined;
  private lines: number | undefined;
  /** Records appended to the file and not yet to the store, and the store's last seq once known. */
  private unstored: LogRecord[] = [];
  private storedSeq: number | undefined;
  private storing: Promise<void> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly run: { run_id: string; session_ref: string },
    /** Absent for a writer outside the server (a tool appending to the file): the file alone. */
    private readonly store?: RunLogStore,
  ) {}

  /** Resolves once every event appended so far is in the store (or could not be put there). */
  stored(): Promise<void> {
    return this.storing;
  }

  /** Copies the new lines to the store, in order, one batch at a time. */
  private copyToStore(record: LogRecord): void {
    const store = this.store;
    if (!store) return;
    this.unstored.push(record);
    this.storing = this.storing.then(async () => {
      const batch = this.unstored.splice(0);
      if (batch.length === 0) return;
      const name = storedLogName(this.run.run_id);
      try {
        this.storedSeq ??= (await store.logs.readLog(name)).at(-1)?.seq ?? 0;
        // What the store lacks before the batch (a log from before it kept one, a write that
        // failed) is copied from the file first: the store's copy has no holes.
        const behind =
          batch[0]!.seq > this.storedSeq + 1 ? readRunLog(this.file).filter((l) => l.seq > this.storedSeq! && l.seq < batch[0]!.seq) : [];
        await store.logs.appendToLog(name, [...behind.flatMap(toRecord), ...batch]);
        this.storedSeq = batch.at(-1)!.seq;
      } catch (error) {
        this.storedSeq = undefined; // read again next time: the file fills the gap
        store.log.warn({ err: error, run_id: this.run.run_id }, "could not copy a run's events to the store");
      }
    });
  }

  append(event: NewRunEvent): { seq: number; envelope: EventEnvelope } {
    if (this.lastHash === undefined || this.lines === undefined) {
      const text = existsSync(this.file) ? readFileSync(this.file, "utf8") : "";
      this.lastHash = [...readRunLog(this.file)].reverse().find((l) => l.event)?.event?.event_hash ?? null;
      this.lines = text === "" ? 0 : text.split("\n").length - 1;
      // A torn last line (no newline): the next event starts on a line of its own.
      if (text !== "" && !text.endsWith("\n")) {
        appendFileSync(this.file, "\n");
        this.lines++;
      }
    }
    const body: Omit<EventEnvelope, "event_hash"> = {
      schema_version: 1,
      event_id: newId("evt"),
      correlation_id: this.run.session_ref,
      causation_id: event.causation_id ?? null,
      ts_wallclock: new Date().toISOString(),
      // Milliseconds on a clock that only moves forward and is shared by every server process
      // (the original's is per process), so an acknowledged position survives a restart.
      ts_monotonic_ms: Math.floor(performance.timeOrigin + performance.now()),
      run_id: this.run.run_id,
      session_ref: this.run.session_ref,
      actor: event.actor ?? "system",
      visibility: event.visibility ?? "team",
      type: event.type,
      payload: event.payload,
      prev_event_hash: this.lastHash,
    };
    const envelope: EventEnvelope = { ...body, event_hash: hashOf(body) };
    const line = JSON.stringify(envelope);
    const fd = openSync(this.file, "a", 0o644);
    try {
      appendFileSync(fd, `${line}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.lastHash = envelope.event_hash;
    this.lines++;
    this.copyToStore({ seq: this.lines, prevHash: envelope.prev_event_hash, hash: envelope.event_hash, body: line });
    return { seq: this.lines, envelope };
  }
}

const logs = new Map<string, RunLog>();

/**
 * The one RunLog of this process for a file: every writer of a run (its session, governance,
 * reconciliation) appends through it, so the chain's last hash is never stale.
 */
export function runLogFor(store: RunLogStore, file: string, run: { run_id: string; session_ref: string }): RunLog {
  let log = logs.get(file);
  if (!log) {
    log = new RunLog(file, run, store);
    logs.set(file, log);
  }
  return log;
}

/** Resolves once this process's appends to the file are in the store too. */
export function storedRunLog(file: string): Promise<void> {
  return logs.get(file)?.stored() ?? Promise.resolve();
}
