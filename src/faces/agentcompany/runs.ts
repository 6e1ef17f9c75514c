// Runs on disk: `work/projects/<project>/runs/<run>/{run.yaml, events.jsonl, outputs/}`.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { AppError } from "./errors.js";
import { newId, readYaml, writeYaml } from "./files.js";
import {
  readRunLog,
  runLogFor,
  storedLogName,
  storedRunLog,
  verifyChain,
  verifyStoredCopy,
  type EventEnvelope,
  type RunLogStore,
} from "./run-log.js";
import { layout, listProjects, requireAgent, requireProject, subdirs } from "./workspace.js";

export const RunRecord = z
  .object({
    schema_version: z.literal(1),
    type: z.literal("run"),
    id: z.string(),
    project_id: z.string(),
    agent_id: z.string(),
    provider: z.string(),
    created_at: z.string(),
    ended_at: z.string().optional(),
    status: z.enum(["running", "ended", "failed", "stopped"]),
    events_relpath: z.string(),
  })
  .passthrough();
export type RunRecord = z.infer<typeof RunRecord>;

export const eventsFile = (ws: string, projectId: string, runId: string): string =>
  path.join(layout.run(ws, projectId, runId), "events.jsonl");

/** Creates the run's directory, its run.yaml, and its first event, run.started. */
export function createRun(
  store: RunLogStore,
  ws: string,
  params: { project_id: string; agent_id: string; provider: string },
): { run: RunRecord; started: EventEnvelope } {
  requireProject(ws, params.project_id);
  requireAgent(ws, params.agent_id);
  const id = newId("run");
  const dir = layout.run(ws, params.project_id, id);
  mkdirSync(path.join(dir, "outputs"), { recursive: true });
  const run: RunRecord = {
    schema_version: 1,
    type: "run",
    id,
    project_id: params.project_id,
    agent_id: params.agent_id,
    provider: params.provider,
    created_at: new Date().toISOString(),
    status: "running",
    events_relpath: path.relative(ws, eventsFile(ws, params.project_id, id)),
  };
  writeYaml(path.join(dir, "run.yaml"), run);
  const log = runLogFor(store, eventsFile(ws, params.project_id, id), { run_id: id, session_ref: `local_${id}` });
  const { envelope } = log.append({
    type: "run.started",
    payload: { project_id: params.project_id, agent_id: params.agent_id, provider: params.provider },
  });
  return { run, started: envelope };
}

export function readRun(ws: string, projectId: string, runId: string): RunRecord {
  const parsed = RunRecord.safeParse(readYaml(path.join(layout.run(ws, projectId, runId), "run.yaml")));
  if (!parsed.success)
    throw new AppError("RUN_NOT_FOUND", `No run ${runId} in project ${projectId}.`, { project_id: projectId, run_id: runId });
  return parsed.data;
}

export function updateRun(ws: string, run: RunRecord, changes: Partial<RunRecord>): RunRecord {
  const next = { ...run, ...changes };
  writeYaml(path.join(layout.run(ws, run.project_id, run.id), "run.yaml"), next);
  return next;
}

/** Every run of the workspace (or of one project), from the files, oldest first. */
export function listRuns(ws: string, projectId?: string): RunRecord[] {
  const projects = projectId ? [requireProject(ws, projectId).id] : listProjects(ws).map((p) => p.id);
  return projects
    .flatMap((p) =>
      subdirs(layout.runs(ws, p)).flatMap((runId) => {
        try {
          return [readRun(ws, p, runId)];
        } catch {
          return [];
        }
      }),
    )
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/**
 * run.replay: the events as the file has them (raw), or checked (verified): the file's hash
 * chain, and the store's copy against it.
 */
export async function replayRun(
  store: RunLogStore,
  ws: string,
  projectId: string,
  runId: string,
  opts: { mode: "raw" | "verified"; tail?: number },
) {
  readRun(ws, projectId, runId);
  const file = eventsFile(ws, projectId, runId);
  const lines = readRunLog(file);
  const shown = opts.tail ? lines.slice(-opts.tail) : lines;
  const events = shown.filter((l) => l.event).map((l) => ({ seq: l.seq, ...l.event! }));
  const parse_errors = shown.filter((l) => l.error).map((l) => ({ seq: l.seq, error: l.error!, raw_line: l.raw }));
  const base = { project_id: projectId, run_id: runId, mode: opts.mode, events, parse_errors };
  if (opts.mode !== "verified") return base;
  const verification = verifyChain(lines);
  if (!verification.ok) return { ...base, verification };
  await storedRunLog(file);
  const broken = verifyStoredCopy(await store.logs.readLog(storedLogName(runId)), lines);
  return { ...base, verification: broken ? { ok: false, checked: verification.checked, first_broken: broken } : verification };
}
