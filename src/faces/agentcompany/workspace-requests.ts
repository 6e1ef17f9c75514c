// The workspace methods, which work on the workspace's files alone. A connection's session
// serves them, and so does the face before the runtime is up (Face.serveEarly): the protocol
// has no initialize, so a client's first request is one of these, and it need not wait for
// the runtime to load.
import { dispatchRequests } from "../../rpc/methods.js";
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import { toRpcError } from "./errors.js";
import { WorkspaceRequests } from "./workspace-protocol.js";
import { initWorkspace, listAgents, listProjects, requireWorkspace, validateWorkspace, workspaceLocks } from "./workspace.js";

export const workspaceHandlers: RequestHandlers<typeof WorkspaceRequests> = {
  "workspace.init": ({ workspace_dir, company_name, force }) =>
    workspaceLocks.write(workspace_dir, () => initWorkspace(workspace_dir, company_name, force)),
  "workspace.open": ({ workspace_dir }) => {
    const ws = requireWorkspace(workspace_dir);
    return { ...validateWorkspace(ws), projects: listProjects(ws), agents: listAgents(ws) };
  },
  "workspace.validate": ({ workspace_dir }) => validateWorkspace(workspace_dir),
};

export const serveWorkspaceRequest = dispatchRequests(WorkspaceRequests, workspaceHandlers, toRpcError);
