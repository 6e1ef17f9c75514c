// The claude-code backend (not implemented yet).
import type { AgentBackend, BackendAvailability, BackendDeps } from "../backend.js";

export function createBackend(_deps: BackendDeps): AgentBackend {
  return {
    type: "claude-code",
    runTurn: async () => ({ status: "failed", error: { code: "backendNotFound", message: "The claude-code backend is not available yet." } }),
    release: async () => {},
    close: async () => {},
  };
}

export async function probe(): Promise<BackendAvailability> {
  return { type: "claude-code", available: false, problem: "not implemented", features: [] };
}
