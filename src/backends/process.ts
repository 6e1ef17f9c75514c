// An external agent's process: spawned in its own process group with piped stdio, its stderr
// kept (a bounded tail, and each line to the log), stopped with its whole group. Each live
// process is registered in the data directory, so one left behind by a killed Switchyard is
// reaped at the next start (the agents also exit on their own when their stdin closes).
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log.js";
import type { TurnError } from "../domain/model.js";
import { BACKEND_ERRORS, type TurnOutcome } from "./backend.js";
import type { TurnRecorder } from "../domain/turn-recorder.js";
import { pidAlive } from "../pid.js";

const STDERR_TAIL_BYTES = 4096;

export interface AgentCommand {
  command: string;
  args: string[];
  cwd: string;
  /** Added to Switchyard's own environment. */
  env?: Record<string, string>;
}

/** A backend failure with the TurnError it ends the turn with. */
export class BackendFailure extends Error {
  constructor(readonly turnError: TurnError) {
    super(turnError.message);
    this.name = "BackendFailure";
  }
}

/** How a turn ends when its agent failed: the error recorded as an item, open items closed. */
export function failedTurn(recorder: TurnRecorder, failure: BackendFailure): TurnOutcome {
  recorder.record("error", { code: failure.turnError.code, message: failure.turnError.message });
  recorder.closeOpen();
  return { status: "failed", error: failure.turnError };
}

export interface AgentProcessOptions {
  log: Logger;
  /** Where live agent pids are registered for reaping (the data directory's `agents/`). */
  registryDir?: string;
  baseEnv?: NodeJS.ProcessEnv;
}

export class AgentProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once the process has exited (or failed to start). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private tail = "";
  private startError: NodeJS.ErrnoException | undefined;
  private exitStatus: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly registration: string | undefined;

  constructor(
    readonly spec: AgentCommand,
    options: AgentProcessOptions,
  ) {
    this.child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: { ...(options.baseEnv ?? process.env), ...spec.env },
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group, so stop() reaches the agent's children too.
      detached: true,
    });
    const log = options.log.child({ agent: path.basename(spec.command), pid: this.child.pid });
    this.child.stderr.setEncoding("utf8");
    let partial = "";
    this.child.stderr.on("data", (chunk: string) => {
      this.tail = (this.tail + chunk).slice(-STDERR_TAIL_BYTES);
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) log.debug({ stderr: line }, "agent stderr");
    });
    // A write to an agent that just died must not crash the server; exit handling reports it.
    this.child.stdin.on("error", () => {});
    this.registration = this.child.pid !== undefined ? register(options.registryDir, this.child.pid, spec) : undefined;
    this.exited = new Promise((resolve) => {
      this.child.once("error", (error: NodeJS.ErrnoException) => {
        this.startError = error;
        this.exitStatus ??= { code: null, signal: null };
        resolve(this.exitStatus);
      });
      this.child.once("close", (code, signal) => {
        this.exitStatus ??= { code, signal };
        if (this.registration) fs.rm(this.registration, { force: true }, () => {});
        log.debug({ code, signal }, "agent exited");
        resolve(this.exitStatus);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitStatus === undefined;
  }

  /** The last few KiB the agent wrote to stderr. */
  stderrTail(): string {
    return this.tail.trim();
  }

  /** Why the agent is gone, as a turn error: not found, or exited with its code and stderr. */
  failure(): TurnError {
    if (this.startError?.code === "ENOENT") {
      return {
        code: BACKEND_ERRORS.notFound,
        message: `The agent command "${this.spec.command}" was not found. Install it or set the backend's command.`,
      };
    }
    if (this.startError) {
      return {
        code: BACKEND_ERRORS.exited,
        message: `The agent command "${this.spec.command}" could not start: ${this.startError.message}`,
      };
    }
    const status = this.exitStatus;
    const how = status?.signal ? `was killed by ${status.signal}` : `exited with code ${status?.code ?? "unknown"}`;
    const tail = this.stderrTail();
    return { code: BACKEND_ERRORS.exited, message: `The agent ${how}.${tail ? ` Its last output on stderr:\n${tail}` : ""}` };
  }

  /** Resolves once the process has started; rejects with BackendFailure when it could not. */
  started(): Promise<void> {
    if (this.child.pid !== undefined && !this.startError) return Promise.resolve();
    return this.exited.then(() => {
      throw new BackendFailure(this.failure());
    });
  }

  /** Stops the agent and its process group: SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 2000): Promise<void> {
    if (!this.alive) return;
    this.child.stdin.end();
    signalGroup(this.child.pid, "SIGTERM");
    const timer = setTimeout(() => signalGroup(this.child.pid, "SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
    // Children that ignored SIGTERM while the leader exited still go.
    signalGroup(this.child.pid, "SIGKILL");
  }
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

interface Registration {
  pid: number;
  ownerPid: number;
  command: string;
}

function register(dir: string | undefined, pid: number, spec: AgentCommand): string | undefined {
  if (!dir) return undefined;
  try {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${pid}.json`);
    const entry: Registration = { pid, ownerPid: process.pid, command: spec.command };
    fs.writeFileSync(file, JSON.stringify(entry));
    return file;
  } catch {
    return undefined;
  }
}

/**
 * Kills the process groups of agents whose Switchyard is gone (killed with SIGKILL, so it could
 * not stop them). Returns how many were reaped. A pid that was reused by an unrelated process is
 * left alone: the command line must still name the agent's command.
 */
export function reapOrphanedAgents(dir: string, log: Logger): number {
  let entries: string[];
  try {
    entries = fs.readdirSync(dir).filter((f) => f.endsWith(".json"));
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const name of entries) {
    const file = path.join(dir, name);
    let entry: Registration;
    try {
      entry = JSON.parse(fs.readFileSync(file, "utf8")) as Registration;
    } catch {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (entry.ownerPid !== process.pid && pidAlive(entry.ownerPid)) continue;
    if (pidAlive(entry.pid) && commandLineOf(entry.pid).includes(path.basename(entry.command))) {
      signalGroup(entry.pid, "SIGKILL");
      reaped++;
      log.warn({ pid: entry.pid, command: entry.command }, "reaped an agent process left by a previous server");
    }
    fs.rmSync(file, { force: true });
  }
  return reaped;
}

function commandLineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
  } catch {
    return "";
  }
}

/** One word of a shell command line, quoted when it needs to be (to show or run an argv as a line). */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
