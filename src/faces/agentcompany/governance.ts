// Governance: artifacts and their visibility, memory deltas (a proposal is an artifact plus a
// unified diff, refused when it looks like a secret; approval is a director's, applies the
// patch and records a review), milestone approvals with their evidence rules, help requests,
// the mistake counter and an agent's context index.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { applyPatch, createPatch } from "diff";
import { z } from "zod";
import { AppError } from "./errors.js";
import { newId, readYaml, writeYaml } from "./files.js";
import { layout, requireAgent, requireProject, subdirs } from "./workspace.js";
import { writeFileDurably } from "../../durable-file.js";
import { yaml } from "../../yaml.js";

export const Role = z.enum(["human", "ceo", "director", "manager", "worker"]);
export type Role = z.infer<typeof Role>;
const RANK: Record<Role, number> = { worker: 0, manager: 1, director: 2, ceo: 3, human: 4 };

export interface Actor {
  actor_id: string;
  actor_role: Role;
  team_id?: string;
}

/** Refuses an action the role may not take: POLICY_DENIED names the rule. */
function requireRole(actor: Actor, least: Role, rule: string): void {
  if (RANK[actor.actor_role] < RANK[least]) {
    throw new AppError("POLICY_DENIED", `${actor.actor_role} ${actor.actor_id} may not do this: ${rule} needs ${least} or above.`, {
      rule_id: rule,
      actor_role: actor.actor_role,
    });
  }
}

// ---- front matter documents ----

export function readFrontMatter(file: string): { data: Record<string, unknown>; body: string } {
  const text = readFileSync(file, "utf8");
  const match = /^---\n([\s\S]*?)\n---\n?([\s\S]*)$/.exec(text);
  if (!match) return { data: {}, body: text };
  return { data: (yaml().parse(match[1]!) ?? {}) as Record<string, unknown>, body: match[2]! };
}

export function writeFrontMatter(file: string, data: Record<string, unknown>, body: string): void {
  writeFileDurably(file, `---\n${yaml().stringify(data)}---\n${body}`);
}

// ---- artifacts ----

const artifactsDir = (ws: string, projectId: string): string => path.join(layout.project(ws, projectId), "artifacts");

export interface ArtifactInfo {
  artifact_id: string;
  project_id: string;
  relpath: string;
  front_matter: Record<string, unknown>;
}

/** Every `.md` artifact of a project with its front matter. */
export function listArtifacts(ws: string, projectId: string): ArtifactInfo[] {
  const dir = artifactsDir(ws, projectId);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".md"))
    .map((f) => ({
      artifact_id: f.slice(0, -3),
      project_id: projectId,
      relpath: path.relative(ws, path.join(dir, f)),
      front_matter: readFrontMatter(path.join(dir, f)).data,
    }));
}

/** Whether the actor may read something of this visibility, produced by `producedBy`. */
function mayRead(actor: Actor, visibility: unknown, producedBy: unknown, teamOf: (agentId: string) => string | undefined): boolean {
  if (visibility === "org" || RANK[actor.actor_role] >= RANK.manager) return true;
  if (visibility === "team")
    return typeof producedBy === "string" && teamOf(producedBy) !== undefined && teamOf(producedBy) === actor.team_id;
  if (visibility === "private_agent") return producedBy === actor.actor_id;
  return false; // managers: and above only
}

export function readArtifact(ws: string, projectId: string, artifactId: string, actor: Actor) {
  requireProject(ws, projectId);
  const dir = artifactsDir(ws, projectId);
  const file = ["md", "patch", "txt", "json"].map((ext) => path.join(dir, `${artifactId}.${ext}`)).find((f) => existsSync(f));
  if (!file) throw new AppError("ARTIFACT_NOT_FOUND", `No artifact ${artifactId} in project ${projectId}.`, { artifact_id: artifactId });
  const { data, body } = file.endsWith(".md") ? readFrontMatter(file) : { data: {}, body: readFileSync(file, "utf8") };
  const teamOf = (agentId: string): string | undefined => {
    try {
      return requireAgent(ws, agentId).team_id;
    } catch {
      return undefined;
    }
  };
  const self = actor.team_id === undefined && actor.actor_role === "worker" ? { ...actor, team_id: teamOf(actor.actor_id) } : actor;
  if (!mayRead(self, data.visibility ?? "org", data.produced_by, teamOf)) {
    throw new AppError("POLICY_DENIED", `${actor.actor_id} may not read artifact ${artifactId} (visibility ${String(data.visibility)}).`, {
      rule_id: "read.visibility",
      artifact_id: artifactId,
    });
  }
  return { artifact_id: artifactId, project_id: projectId, relpath: path.relative(ws, file), front_matter: data, body };
}

// ---- secrets ----

const SECRET_PATTERNS: Array<[string, RegExp]> = [
  ["private key", /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
  ["AWS access key", /\bAKIA[0-9A-Z]{16}\b/],
  ["API key", /\bsk-[A-Za-z0-9_-]{20,}\b/],
  ["GitHub token", /\bgh[pousr]_[A-Za-z0-9]{30,}\b/],
  ["Slack token", /\bxox[baprs]-[A-Za-z0-9-]{10,}\b/],
  ["password assignment", /\b(pass(word)?|secret|api[_-]?key|token)\s*[:=]\s*\S{8,}/i],
];

/** Fails closed: content that looks like a secret is refused with SECRET_DETECTED. */
export function refuseSecrets(texts: string[]): void {
  for (const text of texts) {
    for (const [kind, pattern] of SECRET_PATTERNS) {
      if (pattern.test(text))
        throw new AppError("SECRET_DETECTED", `The proposal looks like it contains a secret (${kind}); it was not written.`, { kind });
    }
  }
}

// ---- memory deltas ----

export interface ProposeDelta {
  project_id: string;
  title: string;
  scope_kind: "project_memory" | "agent_guidance";
  scope_ref?: string;
  sensitivity: "public" | "internal" | "restricted";
  rationale?: string;
  under_heading: string;
  insert_lines: string[];
  visibility: string;
  produced_by: string;
  run_id?: string;
}

function targetFile(ws: string, p: ProposeDelta): string {
  if (p.scope_kind === "project_memory") return path.join(layout.project(ws, p.project_id), "memory.md");
  if (!p.scope_ref) throw new AppError("POLICY_DENIED", "agent_guidance needs scope_ref, the agent id.", {});
  requireAgent(ws, p.scope_ref);
  return path.join(layout.agents(ws), p.scope_ref, "AGENTS.md");
}

/** The text with the lines inserted at the end of the heading's section (the heading is added if missing). */
export function insertUnderHeading(text: string, heading: string, lines: string[]): string {
  const all = text.split("\n");
  const title = heading.startsWith("#") ? heading : `## ${heading}`;
  const at = all.findIndex((l) => l.trim() === title.trim());
  if (at === -1) return `${text.replace(/\n*$/, "\n")}\n${title}\n\n${lines.join("\n")}\n`;
  let end = at + 1;
  while (end < all.length && !/^#{1,6} /.test(all[end]!)) end++;
  while (end > at + 1 && all[end - 1]!.trim() === "") end--;
  // An empty section gets a blank line under its heading, as Markdown is usually written.
  const insert = end === at + 1 ? ["", ...lines] : lines;
  return [...all.slice(0, end), ...insert, ...all.slice(end)].join("\n");
}

export function proposeDelta(ws: string, p: ProposeDelta) {
  requireProject(ws, p.project_id);
  refuseSecrets([p.title, p.rationale ?? "", ...p.insert_lines]);
  const target = targetFile(ws, p);
  const relTarget = path.relative(ws, target);
  const before = existsSync(target) ? readFileSync(target, "utf8") : "";
  const patch = createPatch(relTarget, before, insertUnderHeading(before, p.under_heading, p.insert_lines));
  const id = newId("art");
  const dir = artifactsDir(ws, p.project_id);
  const patchFile = path.join(dir, `${id}.patch`);
  writeFileDurably(patchFile, patch);
  writeFrontMatter(
    path.join(dir, `${id}.md`),
    {
      schema_version: 2,
      type: "memory_delta",
      id,
      title: p.title,
      visibility: p.visibility,
      produced_by: p.produced_by,
      ...(p.run_id ? { run_id: p.run_id } : {}),
      created_at: new Date().toISOString(),
      scope_kind: p.scope_kind,
      scope_ref: p.scope_ref ?? p.project_id,
      sensitivity: p.sensitivity,
      target_file: relTarget,
      patch_file: path.relative(ws, patchFile),
    },
    `# ${p.title}\n\n${p.rationale ?? ""}\n`,
  );
  return { artifact_id: id, target_file: relTarget, patch_file: path.relative(ws, patchFile) };
}

const reviewsDir = (ws: string): string => path.join(ws, "inbox", "reviews");

function writeReview(ws: string, review: Record<string, unknown>): string {
  const id = newId("rev");
  writeYaml(path.join(reviewsDir(ws), `${id}.yaml`), {
    schema_version: 1,
    type: "review",
    id,
    created_at: new Date().toISOString(),
    ...review,
  });
  return id;
}

export function approveDelta(
  ws: string,
  p: { project_id: string; artifact_id: string; decision: "approved" | "denied"; notes?: string } & Actor,
) {
  const artifact = readArtifact(ws, p.project_id, p.artifact_id, p);
  const fm = artifact.front_matter;
  if (fm.type !== "memory_delta") throw new AppError("ARTIFACT_NOT_FOUND", `Artifact ${p.artifact_id} is not a memory delta.`, {});
  requireRole(p, "director", "approve.memory.role");
  let applied = false;
  if (p.decision === "approved") {
    const target = path.join(ws, String(fm.target_file));
    const current = existsSync(target) ? readFileSync(target, "utf8") : "";
    const next = applyPatch(current, readFileSync(path.join(ws, String(fm.patch_file)), "utf8"));
    if (next === false)
      throw new AppError("PATCH_CONFLICT", `${String(fm.target_file)} changed since the proposal; its patch no longer applies.`, {});
    writeFileDurably(target, next);
    applied = true;
  }
  const review_id = writeReview(ws, {
    actor_id: p.actor_id,
    actor_role: p.actor_role,
    decision: p.decision,
    subject: {
      kind: "memory_delta",
      artifact_id: p.artifact_id,
      project_id: p.project_id,
      target_file: fm.target_file,
      patch_file: fm.patch_file,
    },
    policy: { allowed: true, rule_id: "approve.memory.role", reason: `${p.actor_role} may approve memory deltas` },
    ...(p.notes ? { notes: p.notes } : {}),
  });
  return { review_id, decision: p.decision, applied, run_id: typeof fm.run_id === "string" ? fm.run_id : undefined };
}

// ---- milestones ----

export function approveMilestone(
  ws: string,
  p: { project_id: string; task_id: string; milestone_id: string; report_artifact_id: string; notes?: string } & Actor,
) {
  requireRole(p, "manager", "approve.milestone.role");
  const taskFile = path.join(layout.project(ws, p.project_id), "tasks", `${p.task_id}.md`);
  if (!existsSync(taskFile)) throw new AppError("TASK_NOT_FOUND", `No task ${p.task_id} in project ${p.project_id}.`, {});
  const task = readFrontMatter(taskFile);
  const milestones = (task.data.milestones ?? []) as Array<Record<string, unknown>>;
  const milestone = milestones.find((m) => m.id === p.milestone_id);
  if (!milestone) throw new AppError("TASK_NOT_FOUND", `Task ${p.task_id} has no milestone ${p.milestone_id}.`, {});
  const report = readArtifact(ws, p.project_id, p.report_artifact_id, p).front_matter;
  const problems: string[] = [];
  if (report.type !== "milestone_report") problems.push(`${p.report_artifact_id} is not a milestone_report`);
  if (report.task_id !== p.task_id || report.milestone_id !== p.milestone_id) problems.push("the report is for another milestone");
  const evidence = (report.evidence_artifacts ?? []) as string[];
  const tests = (report.tests_artifacts ?? []) as string[];
  const exists = (id: string, exts: string[]): boolean =>
    exts.some((ext) => existsSync(path.join(artifactsDir(ws, p.project_id), `${id}.${ext}`)));
  if (milestone.kind === "coding") {
    if (!evidence.some((id) => exists(id, ["patch"]))) problems.push("a coding milestone needs a .patch evidence artifact");
    if (!tests.some((id) => exists(id, ["txt", "json"]))) problems.push("a coding milestone needs a .txt or .json tests artifact");
  }
  if (problems.length > 0)
    throw new AppError("EVIDENCE_MISSING", `Milestone ${p.milestone_id} cannot be approved: ${problems.join("; ")}.`, { problems });
  milestone.status = "done";
  writeFrontMatter(taskFile, task.data, task.body);
  const review_id = writeReview(ws, {
    actor_id: p.actor_id,
    actor_role: p.actor_role,
    decision: "approved",
    subject: {
      kind: "milestone",
      artifact_id: p.report_artifact_id,
      project_id: p.project_id,
      task_id: p.task_id,
      milestone_id: p.milestone_id,
    },
    policy: { allowed: true, rule_id: "approve.milestone.role", reason: `${p.actor_role} may approve milestones` },
    ...(p.notes ? { notes: p.notes } : {}),
  });
  return {
    review_id,
    task_id: p.task_id,
    milestone_id: p.milestone_id,
    status: "done",
    run_id: typeof report.run_id === "string" ? report.run_id : undefined,
  };
}

// ---- inbox ----

export function listReviews(ws: string, limit: number): Array<Record<string, unknown>> {
  const dir = reviewsDir(ws);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => readYaml(path.join(dir, f)) as Record<string, unknown>)
    .sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)))
    .slice(0, limit);
}

export function listHelpRequests(ws: string, limit: number): Array<Record<string, unknown>> {
  const dir = path.join(ws, "inbox", "help_requests");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".md"))
    .map((f) => {
      const { data, body } = readFrontMatter(path.join(dir, f));
      const request: Record<string, unknown> = { ...data, answered: /## Response\s*\n\s*\S/.test(body) };
      return request;
    })
    .sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)))
    .slice(0, limit);
}

/** Memory deltas and milestone reports no review has decided yet. */
export function pendingApprovals(ws: string, projectIds: string[]): ArtifactInfo[] {
  const decided = new Set(
    listReviews(ws, Number.MAX_SAFE_INTEGER).map((r) => (r.subject as { artifact_id?: string } | undefined)?.artifact_id),
  );
  return projectIds
    .flatMap((p) => listArtifacts(ws, p))
    .filter((a) => (a.front_matter.type === "memory_delta" || a.front_matter.type === "milestone_report") && !decided.has(a.artifact_id));
}

// ---- agents ----

export function recordMistake(
  ws: string,
  p: { agent_id: string; mistake_key: string; summary?: string; prevention_rule?: string; observation?: string },
) {
  requireAgent(ws, p.agent_id);
  const file = path.join(layout.agents(ws), p.agent_id, "mistakes.yaml");
  const doc = (readYaml(file) ?? { schema_version: 1, type: "mistakes", mistakes: [] }) as { mistakes: Array<Record<string, unknown>> };
  let entry = doc.mistakes.find((m) => m.key === p.mistake_key);
  if (!entry) {
    entry = { key: p.mistake_key, count: 0, summary: p.summary ?? "", prevention_rule: p.prevention_rule ?? "", observations: [] };
    doc.mistakes.push(entry);
  }
  entry.count = Number(entry.count) + 1;
  if (p.summary) entry.summary = p.summary;
  if (p.prevention_rule) entry.prevention_rule = p.prevention_rule;
  if (p.observation) (entry.observations as string[]).push(p.observation);
  writeYaml(file, doc);
  return { agent_id: p.agent_id, mistake_key: p.mistake_key, count: entry.count as number };
}

export function refreshContext(
  ws: string,
  p: { agent_id: string; project_id?: string; max_tasks: number; max_scope_paths: number },
  runsOf: (agentId: string) => Array<{ id: string; project_id: string; status: string }>,
) {
  const agent = requireAgent(ws, p.agent_id);
  const projects = p.project_id ? [p.project_id] : subdirs(layout.projects(ws));
  const tasks = projects
    .flatMap((projectId) => {
      const dir = path.join(layout.project(ws, projectId), "tasks");
      return existsSync(dir)
        ? readdirSync(dir)
            .filter((f) => f.endsWith(".md"))
            .map((f) => ({ projectId, file: path.join(dir, f) }))
        : [];
    })
    .map(({ projectId, file }) => ({ projectId, id: path.basename(file, ".md"), ...readFrontMatter(file).data }))
    .filter((t) => (t as { assignee?: string }).assignee === p.agent_id)
    .slice(0, p.max_tasks);
  const runs = runsOf(p.agent_id).slice(-p.max_tasks);
  const lines = [
    `# Context index: ${agent.name}`,
    "",
    `Role: ${agent.role}. Refreshed ${new Date().toISOString()}.`,
    "",
    "## Tasks",
    ...(tasks.length
      ? tasks.map((t) => `- ${t.projectId}/${t.id}: ${String((t as { title?: string }).title ?? "")}`)
      : ["- none assigned"]),
    "",
    "## Recent runs",
    ...(runs.length ? runs.map((r) => `- ${r.project_id}/${r.id}: ${r.status}`) : ["- none"]),
    "",
    "## Memory",
    ...projects.slice(0, p.max_scope_paths).map((projectId) => `- work/projects/${projectId}/memory.md`),
    "",
  ];
  const file = path.join(layout.agents(ws), p.agent_id, "context_index.md");
  writeFileDurably(file, lines.join("\n"));
  return { agent_id: p.agent_id, context_index_relpath: path.relative(ws, file), tasks: tasks.length, runs: runs.length };
}
