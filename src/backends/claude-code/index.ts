// The claude-code backend: each thread's turns run on a long-lived `claude -p` process in
// stream-json mode (one per thread, kept between turns), resumed with `--resume <session>`
// when no process is alive, e.g. after Switchyard restarted.
import { execFile } from "node:child_process";
import type { BackendSpec } from "../../domain/model.js";
import type { AgentBackend, BackendAvailability, BackendDeps, TurnContext, TurnOutcome } from "../backend.js";
import { inputToText } from "../builtin/history.js";
import { SessionPool } from "../pool.js";
import { BackendFailure, failedTurn, type AgentCommand } from "../process.js";
import { ClaudeSession, SessionLostError } from "./session.js";
import { runClaudeTurn } from "./turn.js";

type ClaudeSpec = Extract<BackendSpec, { type: "claude-code" }>;

export const DEFAULT_COMMAND = "claude";

/** Print mode, JSON lines both ways, partial messages, and permission prompts over stdio. */
export const STREAM_JSON_FLAGS = [
  "-p",
  "--input-format",
  "stream-json",
  "--output-format",
  "stream-json",
  "--verbose",
  "--include-partial-messages",
  "--permission-prompt-tool",
  "stdio",
];

const FEATURES = ["approvals", "reasoning", "plan", "usage", "cost", "resume", "images", "steer"];
const PROBE_TIMEOUT_MS = 5000;

/** The command line for a session: the spec's command and args, then the stream-json flags. */
export function commandFor(spec: ClaudeSpec, cwd: string, options: { model?: string; resume?: string } = {}): AgentCommand {
  return {
    command: spec.command ?? DEFAULT_COMMAND,
    args: [
      ...(spec.args ?? []),
      ...STREAM_JSON_FLAGS,
      ...(options.model ? ["--model", options.model] : []),
      ...(options.resume ? ["--resume", options.resume] : []),
    ],
    cwd,
    ...(spec.env ? { env: spec.env } : {}),
  };
}

class ClaudeCodeBackend implements AgentBackend {
  readonly type = "claude-code" as const;
  private readonly pool: SessionPool<ClaudeSession>;

  constructor(private readonly deps: BackendDeps) {
    this.pool = new SessionPool(deps.idleTimeoutMs);
  }

  async runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    const spec: ClaudeSpec = ctx.backendSpec.type === "claude-code" ? ctx.backendSpec : { type: "claude-code" };
    ctx.recorder.record("userMessage", { text: inputToText(ctx.input), input: ctx.input });
    // A new spec, workspace or model needs a new process (which resumes the session).
    const key = JSON.stringify({ spec, cwd: ctx.thread.workspacePath, model: ctx.model ?? null });
    try {
      return await this.pool.use(
        ctx.thread.id,
        key,
        () => this.open(ctx, spec),
        (session) => runClaudeTurn(session, ctx),
      );
    } catch (error) {
      if (ctx.signal.aborted) return { status: "cancelled", reason: "interrupted" };
      if (!(error instanceof BackendFailure)) throw error;
      return failedTurn(ctx.recorder, error);
    } finally {
      ctx.recorder.closeOpen();
    }
  }

  /** Starts the thread's process, resuming its session; a session the CLI lost is replaced, and said so. */
  private async open(ctx: TurnContext, spec: ClaudeSpec): Promise<ClaudeSession> {
    const resume = ctx.session?.backend === "claude-code" ? ctx.session.sessionId : undefined;
    const cwd = ctx.thread.workspacePath;
    const model = ctx.model ? { model: ctx.model } : {};
    const base = {
      log: this.deps.log.child({ threadId: ctx.thread.id, backend: "claude-code" }),
      registryDir: this.deps.agentRegistryDir,
      baseEnv: this.deps.env,
    };
    try {
      return await ClaudeSession.start(
        { ...base, command: commandFor(spec, cwd, { ...model, ...(resume ? { resume } : {}) }), ...(resume ? { resume } : {}) },
        ctx.signal,
      );
    } catch (error) {
      if (!(error instanceof SessionLostError)) throw error;
      ctx.log.warn({ sessionId: error.sessionId, detail: error.detail }, "claude-code session lost; starting a new one");
      ctx.recorder.record("systemNotice", {
        kind: "backendSessionLost",
        message:
          `Claude Code could not resume its session ${error.sessionId} (${error.detail}). ` +
          "This turn starts a new Claude Code session that does not remember the earlier turns; they are still in this thread's history.",
      });
      return ClaudeSession.start({ ...base, command: commandFor(spec, cwd, model) }, ctx.signal);
    }
  }

  release(threadId: string): Promise<void> {
    return this.pool.release(threadId);
  }

  close(): Promise<void> {
    return this.pool.closeAll();
  }
}

export function createBackend(deps: BackendDeps): AgentBackend {
  return new ClaudeCodeBackend(deps);
}

/** Runs `<command> [args] --version` with a short timeout. */
export async function probe(spec: BackendSpec, deps: BackendDeps): Promise<BackendAvailability> {
  const claude: ClaudeSpec = spec.type === "claude-code" ? spec : { type: "claude-code" };
  const command = claude.command ?? DEFAULT_COMMAND;
  return new Promise((resolve) => {
    execFile(
      command,
      [...(claude.args ?? []), "--version"],
      { timeout: PROBE_TIMEOUT_MS, env: { ...deps.env, ...claude.env }, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error) {
          const code = (error as NodeJS.ErrnoException).code;
          const problem =
            code === "ENOENT"
              ? `"${command}" was not found. Install Claude Code (npm install -g @anthropic-ai/claude-code) or set the backend's command.`
              : error.killed
                ? `"${command} --version" did not answer within ${PROBE_TIMEOUT_MS / 1000} s.`
                : `"${command} --version" failed: ${(stderr || error.message).trim().slice(0, 500)}`;
          resolve({ type: "claude-code", available: false, command, problem, features: FEATURES });
          return;
        }
        const version = /\d+\.\d+\.\d+\S*/.exec(stdout)?.[0] ?? stdout.trim().split("\n")[0];
        resolve({ type: "claude-code", available: true, command, ...(version ? { version } : {}), features: FEATURES });
      },
    );
  });
}
