// The AgentCompany face (protocol v1): a local control plane over stdio for company workspaces
// (runs, their hash-chained event logs, the SQLite index, event subscriptions). It has no
// initialize: `switchyard agentcompany server:start` (`ac server:start`) serves it on stdio alone.
import { lazyFace, type Face } from "../face.js";

/** The methods that work on the workspace's files alone (./workspace-requests.ts). */
const WORKSPACE_METHODS = new Set(["workspace.init", "workspace.open", "workspace.validate"]);

export const agentCompanyFace: Face = {
  name: "agentcompany",
  // Application errors are -32000; the in-flight cap needs a code of its own.
  engineErrorCodes: { overloaded: -32001 },
  ...lazyFace("agentcompany", async () => (await import("./session.js")).openAgentCompany),
  // A client's first request is answered without waiting for the runtime to load.
  serveEarly: (method, params, ctx) =>
    WORKSPACE_METHODS.has(method)
      ? import("./workspace-requests.js").then(({ serveWorkspaceRequest }) => serveWorkspaceRequest(method, params, ctx))
      : undefined,
  protocol: async () => (await import("./protocol.js")).agentCompanyProtocol,
};
