// A run's events.jsonl: append-only, one envelope per line, a SHA-256 hash chain per file
// (each event names the hash of the one before). Reading never fails on a torn or edited line:
// it becomes a parse error at its line number (the line number is the event's seq).
import { createHash } from "node:crypto";
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { newId } from "./files.js";

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

/** Appends events to one run's log, chaining each to the last valid event of the file. */
export class RunLog {
  private lastHash: string | null | undefined;
  private lines: number | undefined;

  constructor(
    readonly file: string,
    private readonly run: { run_id: string; session_ref: string },
  ) {}

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
    const fd = openSync(this.file, "a", 0o644);
    try {
      appendFileSync(fd, `${JSON.stringify(envelope)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.lastHash = envelope.event_hash;
    this.lines++;
    return { seq: this.lines, envelope };
  }
}

const logs = new Map<string, RunLog>();

/**
 * The one RunLog of this process for a file: every writer of a run (its session, governance,
 * reconciliation) appends through it, so the chain's last hash is never stale.
 */
export function runLogFor(file: string, run: { run_id: string; session_ref: string }): RunLog {
  let log = logs.get(file);
  if (!log) {
    log = new RunLog(file, run);
    logs.set(file, log);
  }
  return log;
}
