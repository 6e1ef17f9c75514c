// The acp backend: runs a thread's turns on any Agent Client Protocol agent (its command over
// stdio), one process per thread, kept between turns by a SessionPool.
import os from "node:os";
import type { BackendSpec, Thread } from "../../domain/model.js";
import type { AgentBackend, AgentProcessInfo, BackendAvailability, BackendDeps, TurnContext, TurnOutcome } from "../backend.js";
import { inputToText } from "../builtin/history.js";
import { SessionPool } from "../pool.js";
import { BackendFailure, failedTurn } from "../process.js";
import { AcpAgentSession, type AcpSpec } from "./session.js";

class AcpBackend implements AgentBackend {
  readonly type = "acp";
  private readonly pool: SessionPool<AcpAgentSession>;

  constructor(private readonly deps: BackendDeps) {
    this.pool = new SessionPool(deps.idleTimeoutMs);
  }

  async runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    const { thread, recorder } = ctx;
    const spec = acpSpec(ctx.backendSpec);
    // The agent keeps its own copy of the prompt; Switchyard's item comes from the turn's input.
    recorder.record("userMessage", { text: inputToText(ctx.input), input: ctx.input });
    try {
      return await this.withSession(thread, spec, (session) => session.runTurn(ctx));
    } catch (error) {
      if (!(error instanceof BackendFailure)) throw error;
      return failedTurn(recorder, error);
    }
  }

  warm(thread: Thread, spec: BackendSpec): Promise<AgentProcessInfo> {
    return this.withSession(thread, acpSpec(spec), (session) =>
      Promise.resolve({
        ...(session.pid === undefined ? {} : { pid: session.pid }),
        capabilities: session.capabilities as Record<string, unknown>,
        ...(session.agentInfo ? { agentInfo: { name: session.agentInfo.name, version: session.agentInfo.version } } : {}),
      }),
    );
  }

  /** Runs `fn` with the thread's agent session: the running one, or a new one for a new spec or workspace. */
  private withSession<T>(thread: Thread, spec: AcpSpec, fn: (session: AcpAgentSession) => Promise<T>): Promise<T> {
    return this.pool.use(
      thread.id,
      JSON.stringify([spec, thread.workspacePath]),
      () => AcpAgentSession.start(spec, thread.workspacePath, this.deps),
      fn,
    );
  }

  release(threadId: string): Promise<void> {
    return this.pool.release(threadId);
  }

  close(): Promise<void> {
    return this.pool.closeAll();
  }
}

function acpSpec(spec: BackendSpec): AcpSpec {
  if (spec.type !== "acp") throw new Error(`the acp backend was given a ${spec.type} spec`);
  return spec;
}

export function createBackend(deps: BackendDeps): AgentBackend {
  return new AcpBackend(deps);
}

/**
 * Starts the agent and initializes it (ACP has no `--version`), to report its name, version and
 * what it can do; the process is stopped at once.
 */
export async function probe(spec: BackendSpec, deps: BackendDeps): Promise<BackendAvailability> {
  const { command, args = [] } = acpSpec(spec);
  const base = { type: "acp" as const, command: [command, ...args].join(" ") };
  try {
    const session = await AcpAgentSession.start(spec as AcpSpec, os.tmpdir(), {
      log: deps.log,
      env: deps.env,
      agentRegistryDir: deps.agentRegistryDir,
    });
    const { loadSession, promptCapabilities } = session.capabilities;
    const version = session.agentInfo ? `${session.agentInfo.name} ${session.agentInfo.version}` : undefined;
    await session.close();
    const features = [
      "approvals",
      "reasoning",
      "plan",
      "usage",
      ...(loadSession ? ["resume"] : []),
      ...(promptCapabilities?.image ? ["images"] : []),
    ];
    return { ...base, available: true, ...(version ? { version } : {}), features };
  } catch (error) {
    const problem = error instanceof BackendFailure ? `${error.turnError.code}: ${error.turnError.message}` : String(error);
    return { ...base, available: false, problem, features: [] };
  }
}
