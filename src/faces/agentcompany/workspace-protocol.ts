// The AgentCompany methods that work on the workspace's files alone, in a module of their own:
// they are served before the runtime is up (./workspace-requests.ts), and building the whole
// protocol table for them would cost that first answer ~8 ms.
import { z } from "zod";

export const workspaceDir = z.string().min(1).describe("The workspace directory.");
export const Ws = z.object({ workspace_dir: workspaceDir });

const Issue = z.object({ path: z.string(), message: z.string() });
export const Validation = z.object({ workspace_dir: z.string(), valid: z.boolean(), issues: z.array(Issue) });
const Project = z.object({ id: z.string(), name: z.string(), created_at: z.string() }).passthrough();
const Agent = z.object({ id: z.string(), name: z.string(), role: z.string(), provider: z.string() }).passthrough();

export const WorkspaceRequests = {
  "workspace.init": {
    params: Ws.extend({ company_name: z.string().min(1).optional(), force: z.boolean().optional() }),
    result: z.object({
      workspace_dir: z.string(),
      company_id: z.string(),
      project_id: z.string(),
      agent_id: z.string(),
      team_id: z.string(),
    }),
    description: "Creates the workspace layout, its company, and a default team, agent and project (v1 has no method that creates them).",
  },
  "workspace.open": {
    params: Ws,
    result: Validation.extend({ projects: z.array(Project), agents: z.array(Agent) }),
    description: "Validates the workspace and lists its projects and agents.",
  },
  "workspace.validate": { params: Ws, result: Validation, description: "Every missing or invalid file of the layout." },
};
