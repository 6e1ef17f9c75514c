// The codex backend (not implemented yet).
import type { AgentBackend, BackendAvailability, BackendDeps } from "../backend.js";

export function createBackend(_deps: BackendDeps): AgentBackend {
  return {
    type: "codex",
    runTurn: async () => ({ status: "failed", error: { code: "backendNotFound", message: "The codex backend is not available yet." } }),
    release: async () => {},
    close: async () => {},
  };
}

export async function probe(): Promise<BackendAvailability> {
  return { type: "codex", available: false, problem: "not implemented", features: [] };
}
