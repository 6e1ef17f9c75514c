// The backends a server can run turns on: the built-in engine, and external agents whose
// modules load on first use (start-up stays as fast as a builtin-only server).
import type { BackendSpec } from "../domain/model.js";
import type { AgentBackend, BackendAvailability, BackendDeps, BackendModule, BackendSet } from "./backend.js";
import { BuiltinBackend, type BuiltinBackendOptions } from "./builtin/index.js";
import { reapOrphanedAgents } from "./process.js";

type ExternalType = Exclude<BackendSpec["type"], "builtin">;

const EXTERNAL: Record<ExternalType, () => Promise<BackendModule>> = {
  "claude-code": () => import("./claude-code/index.js"),
  acp: () => import("./acp/index.js"),
  codex: () => import("./codex/index.js"),
};

/** The spec each type is probed with when no thread names one (`backend/list`, doctor). */
const PROBE_SPECS: Record<ExternalType, BackendSpec> = {
  "claude-code": { type: "claude-code" },
  codex: { type: "codex" },
  acp: { type: "acp", command: "claude-agent-acp" },
};

export const DEFAULT_AGENT_IDLE_TIMEOUT_MS = 10 * 60_000;

/** Each backend type's availability; the default backend is probed with its own spec. */
export async function probeBackends(defaultSpec: BackendSpec, deps: BackendDeps): Promise<BackendAvailability[]> {
  const builtin: BackendAvailability = {
    type: "builtin",
    available: true,
    features: ["approvals", "reasoning", "plan", "usage", "cost", "resume", "steer"],
  };
  const external = await Promise.all(
    (Object.keys(EXTERNAL) as ExternalType[]).map(async (type): Promise<BackendAvailability> => {
      const spec = defaultSpec.type === type ? defaultSpec : PROBE_SPECS[type];
      try {
        return await (await EXTERNAL[type]()).probe(spec, deps);
      } catch (error) {
        return { type, available: false, problem: error instanceof Error ? error.message : String(error), features: [] };
      }
    }),
  );
  return [builtin, ...external];
}

export class Backends implements BackendSet {
  private readonly builtin: BuiltinBackend;
  private readonly external = new Map<ExternalType, Promise<AgentBackend>>();

  constructor(
    builtin: BuiltinBackendOptions,
    private readonly deps: BackendDeps,
    /** The default backend, probed with its own spec in `availability()`. */
    private readonly defaultSpec: BackendSpec = { type: "builtin" },
  ) {
    this.builtin = new BuiltinBackend(builtin);
  }

  /** Kills agent processes a killed server left behind. Call once at start-up. */
  reapOrphans(): number {
    return reapOrphanedAgents(this.deps.agentRegistryDir, this.deps.log);
  }

  backendFor(spec: BackendSpec): Promise<AgentBackend> {
    if (spec.type === "builtin") return Promise.resolve(this.builtin);
    let backend = this.external.get(spec.type);
    if (!backend) {
      backend = EXTERNAL[spec.type]().then((module) => module.createBackend(this.deps));
      this.external.set(spec.type, backend);
      backend.catch(() => this.external.delete(spec.type));
    }
    return backend;
  }

  availability(): Promise<BackendAvailability[]> {
    return probeBackends(this.defaultSpec, this.deps);
  }

  async release(threadId: string): Promise<void> {
    await Promise.all([...this.external.values()].map(async (b) => (await b).release(threadId)));
  }

  async close(): Promise<void> {
    await Promise.all([...this.external.values()].map(async (b) => (await b).close().catch(() => {})));
  }
}
