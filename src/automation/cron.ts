// Scheduled prompts: a job runs its prompt as a normal turn on its thread when due, whether or
// not a client is attached (subscribers see the turn as any other). Jobs are made by the agent
// (the schedule_prompt tool) or by the server workspace's configuration (`cron.jobs` in its
// `.craft/config.json`, run on a "Scheduled prompts" thread), and kept in the data directory
// (`cron/jobs.json`), so they survive restarts; a run missed while the server was down happens
// once, soon after it starts.
// Schedules: every N ms, once at a time, daily at a local time, or a cron expression (croner).
import fs from "node:fs";
import { randomBytes } from "node:crypto";
import { Cron } from "croner";
import { writeFileDurably } from "../durable-file.js";
import { readSettings } from "../workspace/settings.js";
import { RuntimeError } from "../domain/errors.js";
import type { Logger } from "../log.js";
import type { RuntimeApi } from "../runtime/api.js";
import { channelThread, failedOutcome, runPrompt, type PromptOutcome } from "./run-prompt.js";

export interface CronSchedule {
  kind: "every" | "at" | "daily" | "cron";
  everyMs?: number | null;
  atMs?: number | null;
  initialDelayMs?: number | null;
  dailyHour?: number | null;
  dailyMinute?: number | null;
  /** IANA time zone of daily and cron schedules; UTC when absent. */
  tz?: string | null;
  /** A cron expression (5 or 6 fields), for kind "cron". */
  expr?: string | null;
}

export interface CronJob {
  id: string;
  name: string;
  /** The thread the prompt runs on. */
  threadId: string;
  prompt: string;
  schedule: CronSchedule;
  enabled: boolean;
  createdAtMs: number;
  deleteAfterRun: boolean;
  /** Who made it: the agent (schedule_prompt) or the workspace's configuration. */
  source?: "agent" | "config";
  state: {
    nextRunAtMs: number | null;
    lastRunAtMs: number | null;
    lastStatus: "ok" | "error" | null;
    lastError: string | null;
    lastThreadId: string | null;
    lastResult: string | null;
  };
}

export interface JobResult {
  source: "cron" | "heartbeat";
  jobId?: string;
  threadId: string;
  turnId?: string;
  result: string | null;
  error: string | null;
}

/** The agent's text kept with a job's state. */
const RESULT_CHARS = 500;
/** setTimeout's limit; a later run is re-armed when this passes. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const MIN_EVERY_MS = 1000;

type Runtime = Pick<RuntimeApi, "subscribe" | "startTurn" | "getThread" | "findThread" | "listThreads" | "startThread">;

export class CronService {
  private readonly jobs = new Map<string, CronJob>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<string>();
  private readonly changeListeners = new Set<(job: CronJob, removed: boolean) => void>();
  private readonly resultListeners = new Set<(result: JobResult) => void>();

  constructor(
    private readonly runtime: Runtime,
    /** Where jobs are kept; undefined: in memory only. */
    private readonly file: string | undefined,
    private readonly log: Logger,
  ) {
    for (const job of this.read()) {
      this.jobs.set(job.id, job);
      this.arm(job);
    }
  }

  onChange(listener: (job: CronJob, removed: boolean) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  onResult(listener: (result: JobResult) => void): () => void {
    this.resultListeners.add(listener);
    return () => this.resultListeners.delete(listener);
  }

  /** Tells the result listeners of a run the server made (the heartbeat's too). */
  announceResult(result: JobResult): void {
    for (const listener of this.resultListeners) listener(result);
  }

  list(includeDisabled = false): CronJob[] {
    return [...this.jobs.values()].filter((job) => includeDisabled || job.enabled);
  }

  /**
   * Makes the jobs of a workspace's configuration (`cron.jobs: [{name, prompt, schedule,
   * enabled?}]`) match it: new ones made, changed ones updated, removed ones removed. A job
   * whose schedule cannot run is skipped with a warning.
   */
  async syncFromSettings(workspacePath: string): Promise<void> {
    let entries: unknown;
    try {
      entries = (readSettings(workspacePath).cron as { jobs?: unknown } | undefined)?.jobs;
    } catch (error) {
      this.log.warn({ err: error }, "cron settings unreadable");
      return;
    }
    const wanted = (Array.isArray(entries) ? entries : []) as Array<{
      name?: unknown;
      prompt?: unknown;
      schedule?: CronSchedule;
      enabled?: unknown;
    }>;
    const existing: CronJob[] = [];
    for (const job of this.jobs.values()) {
      if (job.source === "config" && (await this.runtime.findThread(job.threadId))?.workspacePath === workspacePath) existing.push(job);
    }
    for (const job of existing) if (!wanted.some((w) => w.name === job.name)) this.remove(job.id);
    for (const entry of wanted) {
      if (typeof entry.name !== "string" || typeof entry.prompt !== "string" || !entry.schedule) continue;
      const job = existing.find((j) => j.name === entry.name);
      const same = job && job.prompt === entry.prompt && JSON.stringify(job.schedule) === JSON.stringify(entry.schedule);
      if (same && job.enabled === (entry.enabled !== false)) continue;
      try {
        if (job) this.remove(job.id);
        const made = await this.create({
          name: entry.name,
          threadId: await channelThread(this.runtime, { workspacePath, originChannel: "cron", displayName: "Scheduled prompts" }),
          prompt: entry.prompt,
          schedule: entry.schedule,
          source: "config",
        });
        if (entry.enabled === false) this.enable(made.id, false);
      } catch (error) {
        this.log.warn({ err: error, job: entry.name }, "configured cron job skipped");
      }
    }
  }

  async create(params: {
    name: string;
    threadId: string;
    prompt: string;
    schedule: CronSchedule;
    deleteAfterRun?: boolean;
    source?: CronJob["source"];
  }): Promise<CronJob> {
    await this.runtime.getThread(params.threadId);
    const schedule = checkedSchedule(params.schedule);
    const now = Date.now();
    const job: CronJob = {
      id: randomBytes(4).toString("hex"),
      name: params.name,
      threadId: params.threadId,
      prompt: params.prompt,
      schedule,
      enabled: true,
      createdAtMs: now,
      deleteAfterRun: params.deleteAfterRun ?? schedule.kind === "at",
      source: params.source ?? "agent",
      state: { nextRunAtMs: null, lastRunAtMs: null, lastStatus: null, lastError: null, lastThreadId: null, lastResult: null },
    };
    job.state.nextRunAtMs = nextRun(job, now);
    this.jobs.set(job.id, job);
    this.saved(job);
    return job;
  }

  remove(id: string): void {
    const job = this.get(id);
    this.jobs.delete(id);
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
    this.write();
    for (const listener of this.changeListeners) listener(job, true);
  }

  enable(id: string, enabled: boolean): CronJob {
    const job = this.get(id);
    job.enabled = enabled;
    // Pause and resume keep the slot; a missing or past one is computed afresh.
    if (enabled && (job.state.nextRunAtMs === null || job.state.nextRunAtMs <= Date.now()))
      job.state.nextRunAtMs = nextRun(job, Date.now());
    this.saved(job);
    return job;
  }

  /** Runs the job once now (enabled or not), in the background. */
  run(id: string): CronJob {
    const job = this.get(id);
    void this.fire(job, true);
    return job;
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private get(id: string): CronJob {
    const job = this.jobs.get(id);
    if (!job) throw new RuntimeError("cronJobNotFound", `No cron job ${id}`, { jobId: id });
    return job;
  }

  private arm(job: CronJob): void {
    clearTimeout(this.timers.get(job.id));
    this.timers.delete(job.id);
    if (!job.enabled || job.state.nextRunAtMs === null) return;
    const wait = Math.max(0, job.state.nextRunAtMs - Date.now());
    const timer = setTimeout(() => (wait > MAX_TIMER_MS ? this.arm(job) : void this.fire(job, false)), Math.min(wait, MAX_TIMER_MS));
    timer.unref();
    this.timers.set(job.id, timer);
  }

  private async fire(job: CronJob, manual: boolean): Promise<void> {
    if (this.running.has(job.id)) return;
    this.running.add(job.id);
    let outcome: PromptOutcome;
    try {
      outcome = await runPrompt(this.runtime, job.threadId, job.prompt);
    } catch (error) {
      outcome = failedOutcome(error);
    } finally {
      this.running.delete(job.id);
    }
    if (!this.jobs.has(job.id)) return; // removed meanwhile
    const now = Date.now();
    job.state = {
      ...job.state,
      lastRunAtMs: now,
      lastStatus: outcome.status,
      lastError: outcome.error,
      lastThreadId: job.threadId,
      lastResult: outcome.text === null ? null : outcome.text.slice(0, RESULT_CHARS),
      nextRunAtMs: manual ? job.state.nextRunAtMs : nextRun(job, now),
    };
    this.log.info({ jobId: job.id, status: outcome.status }, "cron job ran");
    this.announceResult({
      source: "cron",
      jobId: job.id,
      threadId: job.threadId,
      ...(outcome.turnId ? { turnId: outcome.turnId } : {}),
      result: outcome.text,
      error: outcome.error,
    });
    if (job.deleteAfterRun && outcome.status === "ok" && !manual) this.remove(job.id);
    else this.saved(job);
  }

  /** Persists the jobs, re-arms this one and tells the listeners. */
  private saved(job: CronJob): void {
    this.write();
    this.arm(job);
    for (const listener of this.changeListeners) listener(job, false);
  }

  private read(): CronJob[] {
    if (!this.file) return [];
    try {
      const jobs = JSON.parse(fs.readFileSync(this.file, "utf8")) as unknown;
      return Array.isArray(jobs) ? (jobs as CronJob[]) : [];
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") this.log.error({ err: error, file: this.file }, "cannot read the cron jobs");
      return [];
    }
  }

  private write(): void {
    if (this.file) writeFileDurably(this.file, `${JSON.stringify([...this.jobs.values()], null, 2)}\n`, 0o600);
  }
}

/** The schedule if it is one that can run; else invalidInput saying why. */
export function checkedSchedule(schedule: CronSchedule): CronSchedule {
  const bad = (why: string): never => {
    throw new RuntimeError("invalidInput", `Invalid schedule: ${why}`);
  };
  switch (schedule.kind) {
    case "every":
      if (!schedule.everyMs || schedule.everyMs < MIN_EVERY_MS) bad(`everyMs must be at least ${MIN_EVERY_MS}`);
      break;
    case "at":
      if (!schedule.atMs) bad("atMs is required");
      break;
    case "daily":
    case "cron":
      try {
        croner(schedule);
      } catch (error) {
        bad(error instanceof Error ? error.message : String(error));
      }
      break;
    default:
      bad(`unknown kind ${String((schedule as { kind: unknown }).kind)}`);
  }
  return schedule;
}

function croner(schedule: CronSchedule): Cron {
  const pattern =
    schedule.kind === "daily"
      ? `${schedule.dailyMinute ?? 0} ${schedule.dailyHour ?? bad("dailyHour is required")} * * *`
      : (schedule.expr ?? bad("expr is required"));
  return new Cron(pattern, { timezone: schedule.tz ?? "UTC", paused: true });
}

function bad(why: string): never {
  throw new Error(why);
}

/** When the job runs next after `now`; null when it never will. */
function nextRun(job: CronJob, now: number): number | null {
  const { schedule, state } = job;
  switch (schedule.kind) {
    case "every": {
      const first = job.createdAtMs + (schedule.initialDelayMs ?? schedule.everyMs!);
      const next = state.lastRunAtMs === null ? first : state.lastRunAtMs + schedule.everyMs!;
      return Math.max(next, now);
    }
    case "at":
      return state.lastRunAtMs === null ? schedule.atMs! : null;
    default:
      return croner(schedule).nextRun(new Date(now))?.getTime() ?? null;
  }
}
