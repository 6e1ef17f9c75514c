// The codex backend: runs a thread's turns on `codex app-server` (its v2 JSON-RPC over stdio),
// one process per thread, kept between turns by a SessionPool.
import { execFile } from "node:child_process";
import type { BackendSpec } from "../../domain/model.js";
import type { AgentBackend, BackendAvailability, BackendDeps, TurnContext, TurnOutcome } from "../backend.js";
import { BACKEND_ERRORS } from "../backend.js";
import { inputToText } from "../builtin/history.js";
import { SessionPool } from "../pool.js";
import { BackendFailure, failedTurn } from "../process.js";
import { CodexSession, DEFAULT_CODEX_COMMAND, type CodexSpec } from "./session.js";

const PROBE_TIMEOUT_MS = 5_000;
export const CODEX_FEATURES = ["approvals", "reasoning", "plan", "usage", "resume", "images"];

class CodexBackend implements AgentBackend {
  readonly type = "codex";
  private readonly pool: SessionPool<CodexSession>;

  constructor(private readonly deps: BackendDeps) {
    this.pool = new SessionPool(deps.idleTimeoutMs);
  }

  async runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    const { thread, recorder } = ctx;
    const spec = codexSpec(thread.configuration?.backend);
    const workspace = thread.workspacePath;
    // Codex records the user's message too; Switchyard's item comes from the turn's own input.
    recorder.record("userMessage", { text: inputToText(ctx.input), input: ctx.input });
    try {
      return await this.pool.use(
        thread.id,
        JSON.stringify([spec, workspace]),
        () => CodexSession.start(spec, workspace, this.deps),
        (session) => session.runTurn(ctx),
      );
    } catch (error) {
      if (!(error instanceof BackendFailure)) throw error;
      return failedTurn(recorder, error);
    }
  }

  release(threadId: string): Promise<void> {
    return this.pool.release(threadId);
  }

  close(): Promise<void> {
    return this.pool.closeAll();
  }
}

function codexSpec(spec: BackendSpec | undefined): CodexSpec {
  return spec?.type === "codex" ? spec : { type: "codex" };
}

export function createBackend(deps: BackendDeps): AgentBackend {
  return new CodexBackend(deps);
}

/** Runs `codex --version` (with the spec's command, args and env) without starting a session. */
export async function probe(spec: BackendSpec, deps: BackendDeps): Promise<BackendAvailability> {
  const { command = DEFAULT_CODEX_COMMAND, args = [], env = {} } = spec.type === "codex" ? spec : {};
  const base = { type: "codex" as const, command: [command, ...args].join(" ") };
  return new Promise((resolve) => {
    execFile(command, [...args, "--version"], { timeout: PROBE_TIMEOUT_MS, env: { ...deps.env, ...env } }, (error, stdout, stderr) => {
      if (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const problem =
          code === "ENOENT"
            ? `${BACKEND_ERRORS.notFound}: "${command}" was not found. Install Codex (npm install -g @openai/codex) or set the backend's command.`
            : error.killed
              ? `"${command} --version" did not answer within ${PROBE_TIMEOUT_MS} ms.`
              : `"${command} --version" failed: ${(stderr || error.message).trim()}`;
        resolve({ ...base, available: false, problem, features: [] });
        return;
      }
      const version = /(\d+\.\d+\.\d+[\w.-]*)/.exec(stdout)?.[1] ?? stdout.trim();
      resolve({ ...base, available: true, ...(version ? { version } : {}), features: CODEX_FEATURES });
    });
  });
}
