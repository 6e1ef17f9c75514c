// An AgentCompany workspace: the directory layout (the files are the truth), `workspace.init`
// with a default team, agent and project, validation, and the write lock that serializes
// writes in this process and keeps a second server process out.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { pidAlive } from "../../pid.js";
import { AppError } from "./errors.js";
import { newId, readYaml, writeYaml } from "./files.js";
import { writeFileDurably } from "../../durable-file.js";

const Company = z.object({
  schema_version: z.literal(1),
  type: z.literal("company"),
  id: z.string(),
  name: z.string(),
  created_at: z.string(),
});
const Team = z.object({ schema_version: z.literal(1), type: z.literal("team"), id: z.string(), name: z.string(), created_at: z.string() });
const Agent = z.object({
  schema_version: z.literal(1),
  type: z.literal("agent"),
  id: z.string(),
  name: z.string(),
  role: z.enum(["ceo", "director", "manager", "worker"]),
  provider: z.string(),
  team_id: z.string().optional(),
  created_at: z.string(),
});
const Project = z.object({
  schema_version: z.literal(1),
  type: z.literal("project"),
  id: z.string(),
  name: z.string(),
  created_at: z.string(),
});
export type AgentRecord = z.infer<typeof Agent>;
export type ProjectRecord = z.infer<typeof Project>;

export const layout = {
  company: (ws: string) => path.join(ws, "company", "company.yaml"),
  policy: (ws: string) => path.join(ws, "company", "policy.yaml"),
  teams: (ws: string) => path.join(ws, "org", "teams"),
  agents: (ws: string) => path.join(ws, "org", "agents"),
  projects: (ws: string) => path.join(ws, "work", "projects"),
  project: (ws: string, projectId: string) => path.join(ws, "work", "projects", projectId),
  runs: (ws: string, projectId: string) => path.join(ws, "work", "projects", projectId, "runs"),
  run: (ws: string, projectId: string, runId: string) => path.join(ws, "work", "projects", projectId, "runs", runId),
  local: (ws: string) => path.join(ws, ".local"),
  index: (ws: string) => path.join(ws, ".local", "index.sqlite"),
  lock: (ws: string) => path.join(ws, ".local", "locks", "workspace.write.lock"),
};

/** The workspace directory, resolved; WORKSPACE_NOT_FOUND when it is not an initialized workspace. */
export function requireWorkspace(dir: string): string {
  const ws = path.resolve(dir);
  if (!existsSync(layout.company(ws))) {
    throw new AppError(
      "WORKSPACE_NOT_FOUND",
      `${ws} is not an AgentCompany workspace (no company/company.yaml): run workspace.init first.`,
      {
        workspace_dir: ws,
      },
    );
  }
  return ws;
}

export interface InitResult {
  workspace_dir: string;
  company_id: string;
  project_id: string;
  agent_id: string;
  team_id: string;
}

/** Creates the layout, the company, and (v1 has no method for them) a default team, agent and project. */
export function initWorkspace(dir: string, companyName = "AgentCompany", force = false): InitResult {
  const ws = path.resolve(dir);
  if (existsSync(layout.company(ws)) && !force) {
    throw new AppError("WORKSPACE_EXISTS", `${ws} is already a workspace (pass force to initialize it again).`, { workspace_dir: ws });
  }
  const now = new Date().toISOString();
  const ids = { company_id: newId("cmp"), team_id: newId("team"), agent_id: newId("agent"), project_id: newId("proj") };
  for (const sub of [
    "company/migrations",
    "org/teams",
    "org/agents",
    "work/projects",
    "inbox/reviews",
    "inbox/help_requests",
    ".local/sessions",
    ".local/locks",
  ]) {
    mkdirSync(path.join(ws, sub), { recursive: true });
  }
  writeYaml(layout.company(ws), { schema_version: 1, type: "company", id: ids.company_id, name: companyName, created_at: now });
  writeYaml(layout.policy(ws), {
    schema_version: 1,
    type: "policy",
    visibility_defaults: {
      worker_journal: "private_agent",
      worker_milestone_artifact: "team",
      manager_proposal: "managers",
      director_workplan: "org",
    },
  });
  const team = path.join(layout.teams(ws), ids.team_id);
  writeYaml(path.join(team, "team.yaml"), { schema_version: 1, type: "team", id: ids.team_id, name: "Default team", created_at: now });
  writeFileDurably(path.join(team, "memory.md"), "# Team Memory\n");
  const agent = path.join(layout.agents(ws), ids.agent_id);
  writeYaml(path.join(agent, "agent.yaml"), {
    schema_version: 1,
    type: "agent",
    id: ids.agent_id,
    name: "Default worker",
    role: "worker",
    provider: "switchyard",
    team_id: ids.team_id,
    created_at: now,
  });
  writeFileDurably(path.join(agent, "AGENTS.md"), "# Agent Guidance\n");
  writeFileDurably(path.join(agent, "journal.md"), "# Journal\n");
  writeYaml(path.join(agent, "mistakes.yaml"), { schema_version: 1, type: "mistakes", mistakes: [] });
  const project = layout.project(ws, ids.project_id);
  writeYaml(path.join(project, "project.yaml"), {
    schema_version: 1,
    type: "project",
    id: ids.project_id,
    name: "Default project",
    created_at: now,
  });
  writeFileDurably(path.join(project, "memory.md"), "# Project Memory (Curated)\n\n## Summary\n\n## Decisions\n\n## Links\n");
  for (const sub of ["tasks", "artifacts", "runs"]) mkdirSync(path.join(project, sub), { recursive: true });
  return { workspace_dir: ws, ...ids };
}

export interface ValidationIssue {
  path: string;
  message: string;
}

/** Every file of the layout that is missing or does not parse; relative paths. */
export function validateWorkspace(dir: string): { workspace_dir: string; valid: boolean; issues: ValidationIssue[] } {
  const ws = path.resolve(dir);
  const issues: ValidationIssue[] = [];
  const check = (file: string, schema: z.ZodType): void => {
    const relative = path.relative(ws, file);
    try {
      const value = readYaml(file);
      if (value === undefined) issues.push({ path: relative, message: "missing" });
      else {
        const parsed = schema.safeParse(value);
        if (!parsed.success)
          for (const issue of parsed.error.issues)
            issues.push({ path: relative, message: `${issue.path.join(".") || "(document)"}: ${issue.message}` });
      }
    } catch (error) {
      issues.push({ path: relative, message: `invalid YAML: ${(error as Error).message.split("\n")[0]}` });
    }
  };
  check(layout.company(ws), Company);
  for (const id of subdirs(layout.teams(ws))) check(path.join(layout.teams(ws), id, "team.yaml"), Team);
  for (const id of subdirs(layout.agents(ws))) check(path.join(layout.agents(ws), id, "agent.yaml"), Agent);
  for (const id of subdirs(layout.projects(ws))) check(path.join(layout.project(ws, id), "project.yaml"), Project);
  return { workspace_dir: ws, valid: issues.length === 0, issues };
}

export function subdirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
}

function records<T>(dir: string, file: string, schema: z.ZodType<T>): T[] {
  return subdirs(dir).flatMap((id) => {
    try {
      const parsed = schema.safeParse(readYaml(path.join(dir, id, file)));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
}

export const listProjects = (ws: string): ProjectRecord[] => records(layout.projects(ws), "project.yaml", Project);
export const listAgents = (ws: string): AgentRecord[] => records(layout.agents(ws), "agent.yaml", Agent);

export function requireProject(ws: string, projectId: string): ProjectRecord {
  const found = listProjects(ws).find((p) => p.id === projectId);
  if (!found) throw new AppError("PROJECT_NOT_FOUND", `No project ${projectId} in ${ws}.`, { project_id: projectId });
  return found;
}

export function requireAgent(ws: string, agentId: string): AgentRecord {
  const found = listAgents(ws).find((a) => a.id === agentId);
  if (!found) throw new AppError("AGENT_NOT_FOUND", `No agent ${agentId} in ${ws}.`, { agent_id: agentId });
  return found;
}

/**
 * The workspace's write lock: writes of this process run one at a time, and a lock file names
 * the process holding the workspace, so a second server refuses to write (a dead holder's
 * lock is taken over).
 */
class WorkspaceLocks {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly held = new Set<string>();

  async write<T>(dir: string, fn: () => T | Promise<T>): Promise<T> {
    const ws = path.resolve(dir);
    this.claim(ws);
    const previous = this.queues.get(ws) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    this.queues.set(ws, next);
    return next;
  }

  private claim(ws: string): void {
    if (this.held.has(ws)) return;
    const file = layout.lock(ws);
    mkdirSync(path.dirname(file), { recursive: true });
    const holder = existsSync(file) ? Number(readFileSync(file, "utf8").trim()) : undefined;
    if (holder && holder !== process.pid && pidAlive(holder)) {
      throw new AppError("WORKSPACE_LOCKED", `Another AgentCompany server (pid ${holder}) is writing to ${ws}.`, {
        workspace_dir: ws,
        pid: holder,
      });
    }
    writeFileSync(file, `${process.pid}\n`);
    this.held.add(ws);
  }
}

/** One for the process, as the lock file names the process: its sessions and its early answers share it. */
export const workspaceLocks = new WorkspaceLocks();
