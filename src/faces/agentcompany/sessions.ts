// Sessions: a run's live execution. A plain command (argv, in the workspace) or an agent
// adapter (a runtime thread on the adapter's backend, visible from every face), its output
// recorded as run events. Records in `.local/sessions/` let poll, collect and stop work after
// a restart; a session a dead server left running is reconciled.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { pidAlive } from "../../pid.js";
import type { BackendSpec } from "../../domain/model.js";
import type { RuntimeApi } from "../../runtime/api.js";
import { watchTurn } from "../turn-watch.js";
import { AppError } from "./errors.js";
import { readYaml, writeYaml } from "./files.js";
import { runLogFor, type EventEnvelope, type NewRunEvent, type RunLogStore } from "./run-log.js";
import { eventsFile, readRun, updateRun } from "./runs.js";
import { ADAPTERS, runEventsOf, type RunEnd } from "./wire.js";
import { layout } from "./workspace.js";
import { writeFileDurably } from "../../durable-file.js";

const SessionRecord = z.object({
  type: z.literal("session_record"),
  session_ref: z.string(),
  project_id: z.string(),
  run_id: z.string(),
  mode: z.enum(["command", "agent"]),
  adapter: z.string().optional(),
  status: z.enum(["running", "ended", "failed", "stopped"]),
  started_at: z.string(),
  ended_at: z.string().optional(),
  pid: z.number().optional(),
  thread_id: z.string().optional(),
  exit_code: z.number().nullable().optional(),
  signal: z.string().nullable().optional(),
  error: z.string().optional(),
});
export type SessionRecord = z.infer<typeof SessionRecord>;

export interface LaunchParams {
  project_id: string;
  run_id: string;
  argv?: string[];
  /** A repository linked in `.local/machine.yaml` (`repo_roots`): the session runs there. */
  repo_id?: string;
  workdir_rel?: string;
  /** Hard limits of an agent session: past one, the session is stopped (budget.exceeded). */
  budget?: { hard_tokens?: number; hard_cost_usd?: number };
  prompt_text?: string;
  model?: string;
  stdin_text?: string;
  env?: Record<string, string>;
}

/** Where each appended event goes besides the file (the subscriptions' bus). */
export type Publish = (ws: string, projectId: string, runId: string, seq: number, event: EventEnvelope) => void;

interface MachineConfig {
  repo_roots?: Record<string, string>;
  provider_bins?: Record<string, string>;
}

const recordFile = (ws: string, ref: string): string => path.join(layout.local(ws), "sessions", `${encodeURIComponent(ref)}.yaml`);

export class Sessions {
  /** Running sessions of this process: how to stop each, and who waits for its end. */
  private readonly live = new Map<string, { stop: () => void; ended: Promise<void> }>();

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly runLogStore: RunLogStore,
    private readonly publish: Publish,
  ) {}

  async launch(ws: string, params: LaunchParams): Promise<SessionRecord> {
    const run = readRun(ws, params.project_id, params.run_id);
    const ref = `local_${run.id}`;
    const existing = this.read(ws, ref);
    if (existing?.status === "running")
      throw new AppError("SESSION_RUNNING", `Run ${run.id} already has a running session.`, { session_ref: ref });
    const machine = readYaml(path.join(layout.local(ws), "machine.yaml")) as MachineConfig | undefined;
    const root = params.repo_id ? machine?.repo_roots?.[params.repo_id] : ws;
    if (!root) throw new AppError("POLICY_DENIED", `No repository "${params.repo_id}" is linked in .local/machine.yaml (repo_roots).`, {});
    const cwd = path.resolve(root, params.workdir_rel ?? ".");
    if (cwd !== root && !cwd.startsWith(root + path.sep)) {
      throw new AppError(
        "POLICY_DENIED",
        `workdir_rel must stay inside ${params.repo_id ? "the repository" : "the workspace"} (got ${params.workdir_rel}).`,
        {},
      );
    }
    const log = runLogFor(this.runLogStore, eventsFile(ws, run.project_id, run.id), { run_id: run.id, session_ref: ref });
    const append = (event: NewRunEvent): void => {
      const { seq, envelope } = log.append(event);
      this.publish(ws, run.project_id, run.id, seq, envelope);
    };
    const outputs = path.join(layout.run(ws, run.project_id, run.id), "outputs");
    mkdirSync(outputs, { recursive: true });
    const base = {
      type: "session_record" as const,
      session_ref: ref,
      project_id: run.project_id,
      run_id: run.id,
      started_at: new Date().toISOString(),
      status: "running" as const,
    };

    let finished!: () => void;
    const ended = new Promise<void>((resolve) => (finished = resolve));
    const finish = (end: RunEnd, details: Partial<SessionRecord>): void => {
      append(end.event);
      updateRun(ws, readRun(ws, run.project_id, run.id), { status: end.status, ended_at: new Date().toISOString() });
      this.write(ws, { ...this.read(ws, ref)!, ...details, status: end.status, ended_at: new Date().toISOString() });
      this.live.delete(ref);
      finished();
    };

    if (params.argv && params.argv.length > 0) {
      const [command, ...args] = params.argv as [string, ...string[]];
      append({
        type: "run.executing",
        payload: {
          argv: params.argv,
          ...(params.repo_id ? { repo_id: params.repo_id } : {}),
          workdir_rel: path.relative(root, cwd) || ".",
        },
      });
      const child = spawn(command, args, { cwd, env: { ...process.env, ...params.env }, stdio: ["pipe", "pipe", "pipe"] });
      const record: SessionRecord = { ...base, mode: "command", ...(child.pid ? { pid: child.pid } : {}) };
      this.write(ws, record);
      const files = { stdout: path.join(outputs, "stdout.txt"), stderr: path.join(outputs, "stderr.txt") };
      writeFileSync(files.stdout, "");
      writeFileSync(files.stderr, "");
      for (const stream of ["stdout", "stderr"] as const) {
        child[stream].setEncoding("utf8").on("data", (chunk: string) => {
          writeFileSync(files[stream], chunk, { flag: "a" });
          append({ type: "provider.raw", payload: { stream, chunk }, visibility: "team" });
        });
      }
      if (params.stdin_text !== undefined) writeFileDurably(path.join(outputs, "stdin.txt"), params.stdin_text);
      // A command that exits without reading its input is not an error of the server's.
      child.stdin.on("error", () => undefined);
      child.stdin.end(params.stdin_text ?? "");
      let stopped = false;
      child.once("error", (error) =>
        finish({ status: "failed", event: { type: "run.failed", payload: { error: error.message } } }, { error: error.message }),
      );
      child.once("close", (code, signal) => {
        if (stopped)
          finish(
            { status: "stopped", event: { type: "run.stopped", payload: { exit_code: code, signal, stopped: true } } },
            { exit_code: code, signal },
          );
        else if (code === 0)
          finish(
            { status: "ended", event: { type: "run.ended", payload: { exit_code: 0, signal: null, stopped: false } } },
            { exit_code: 0 },
          );
        else
          finish(
            { status: "failed", event: { type: "run.failed", payload: { exit_code: code, signal, stopped: false } } },
            { exit_code: code, signal },
          );
      });
      this.live.set(ref, {
        stop: () => {
          stopped = true;
          child.kill("SIGTERM");
        },
        ended,
      });
      return record;
    }

    const adapter = ADAPTERS[run.provider];
    const spec = adapter?.backend;
    if (!adapter || !spec) {
      throw new AppError(
        "ADAPTER_UNAVAILABLE",
        `Run ${run.id} names provider "${run.provider}", which has no adapter here; give argv for a command.`,
        {},
      );
    }
    if (!params.prompt_text) throw new AppError("ADAPTER_UNAVAILABLE", "An agent session needs prompt_text (or argv for a command).", {});
    // `.local/machine.yaml` may name this machine's binary of the provider (provider_bins).
    const bin = machine?.provider_bins?.[adapter.provider];
    const backend: BackendSpec = bin && (spec.type === "claude-code" || spec.type === "codex") ? { ...spec, command: bin } : spec;
    const thread = this.runtime.startThread({
      workspacePath: cwd,
      originChannel: "agentcompany",
      channelContext: `run:${run.id}`,
      displayName: `${run.agent_id} · ${run.id}`,
      // The control plane governs through its own policy; the agent is not asked per command.
      configuration: { backend, approvalPolicy: "autoApprove" },
      metadata: { agentcompany: { workspace_dir: ws, project_id: run.project_id, run_id: run.id } },
    });
    append({
      type: "run.executing",
      payload: {
        adapter: run.provider,
        thread_id: thread.id,
        ...(params.repo_id ? { repo_id: params.repo_id } : {}),
        workdir_rel: path.relative(root, cwd) || ".",
      },
    });
    const record: SessionRecord = { ...base, mode: "agent", adapter: run.provider, thread_id: thread.id };
    this.write(ws, record);
    let lastMessage = "";
    let overBudget = false;
    await watchTurn(
      this.runtime,
      thread.id,
      { input: [{ type: "text", text: params.prompt_text }], ...(params.model ? { model: params.model } : {}) },
      (event) => {
        const { events, end } = runEventsOf(event);
        for (const e of events) append(e);
        if (event.type === "usage.updated" && params.budget && !overBudget) {
          const { totalTokens, costUsd } = event.data.usage;
          const { hard_tokens, hard_cost_usd } = params.budget;
          if ((hard_tokens !== undefined && totalTokens > hard_tokens) || (hard_cost_usd !== undefined && (costUsd ?? 0) > hard_cost_usd)) {
            overBudget = true;
            append({ type: "budget.exceeded", payload: { total_tokens: totalTokens, cost_usd: costUsd ?? null, budget: params.budget } });
            void this.runtime.interrupt(thread.id).catch(() => undefined);
          }
        }
        if (event.type === "item.completed" && event.data.item.type === "agentMessage") lastMessage = event.data.item.payload.text;
        if (end) {
          writeFileDurably(path.join(outputs, "last_message.md"), lastMessage);
          finish(end, end.status === "failed" ? { error: String((end.event.payload.error as { message?: string }).message) } : {});
        }
      },
    );
    this.live.set(ref, { stop: () => void this.runtime.interrupt(thread.id).catch(() => undefined), ended });
    return record;
  }

  read(ws: string, ref: string): SessionRecord | undefined {
    const parsed = SessionRecord.safeParse(readYaml(recordFile(ws, ref)));
    return parsed.success ? parsed.data : undefined;
  }

  private write(ws: string, record: SessionRecord): void {
    writeYaml(recordFile(ws, record.session_ref), record);
  }

  require(ws: string, ref: string): SessionRecord {
    const record = this.read(ws, ref);
    if (!record) throw new AppError("SESSION_NOT_FOUND", `No session ${ref}.`, { session_ref: ref });
    return this.reconcile(ws, record);
  }

  /** A session recorded as running that no process of ours runs: its process is gone or not ours. */
  private reconcile(ws: string, record: SessionRecord): SessionRecord {
    if (record.status !== "running" || this.live.has(record.session_ref)) return record;
    const alive = record.pid !== undefined && pidAlive(record.pid);
    if (alive) return record; // a command left by a dead server: still running, but not ours to read
    const next: SessionRecord = {
      ...record,
      status: "failed",
      ended_at: new Date().toISOString(),
      error: "The server that ran this session stopped before it ended.",
    };
    this.write(ws, next);
    const log = runLogFor(this.runLogStore, eventsFile(ws, record.project_id, record.run_id), {
      run_id: record.run_id,
      session_ref: record.session_ref,
    });
    const { seq, envelope } = log.append({ type: "run.failed", payload: { error: next.error, orphaned: true } });
    this.publish(ws, record.project_id, record.run_id, seq, envelope);
    updateRun(ws, readRun(ws, record.project_id, record.run_id), { status: "failed", ended_at: next.ended_at! });
    return next;
  }

  list(ws: string, projectId?: string): SessionRecord[] {
    const dir = path.join(layout.local(ws), "sessions");
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .flatMap((f) => {
        const record = this.read(ws, decodeURIComponent(f.slice(0, -5)));
        return record && (projectId === undefined || record.project_id === projectId) ? [this.reconcile(ws, record)] : [];
      })
      .sort((a, b) => a.started_at.localeCompare(b.started_at));
  }

  /** Waits for the session's end (up to timeoutMs), then its outputs. */
  async collect(ws: string, ref: string, timeoutMs: number): Promise<SessionRecord & { outputs: Record<string, string> }> {
    const live = this.live.get(ref);
    if (live) await Promise.race([live.ended, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
    const record = this.require(ws, ref);
    const dir = path.join(layout.run(ws, record.project_id, record.run_id), "outputs");
    const outputs: Record<string, string> = {};
    for (const name of ["stdout.txt", "stderr.txt", "last_message.md"]) {
      const file = path.join(dir, name);
      if (existsSync(file)) outputs[name] = readFileSync(file, "utf8");
    }
    return { ...record, outputs };
  }

  stop(ws: string, ref: string): SessionRecord {
    const record = this.require(ws, ref);
    if (record.status === "running") {
      const live = this.live.get(ref);
      if (live) live.stop();
      else if (record.pid !== undefined && pidAlive(record.pid)) process.kill(record.pid, "SIGTERM");
    }
    return record;
  }
}
