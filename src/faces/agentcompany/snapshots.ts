// Snapshots for dashboards: the run monitor (indexed runs with their last event, counts and
// live session status), the review inbox (pending approvals, recent decisions) and the UI
// bundle of both with the colleagues. Built from the index, synced (or rebuilt) first.
import { listArtifacts, listReviews, pendingApprovals } from "./governance.js";
import type { WorkspaceIndex } from "./index-db.js";
import type { Sessions } from "./sessions.js";
import { listAgents, listProjects } from "./workspace.js";

export interface IndexRefresh {
  refresh_index?: boolean;
  sync_index?: boolean;
}

function refresh(index: WorkspaceIndex, opts: IndexRefresh): { index_rebuilt: boolean; index_synced: boolean } {
  if (opts.refresh_index) {
    index.rebuild();
    return { index_rebuilt: true, index_synced: false };
  }
  if (opts.sync_index !== false) index.sync();
  return { index_rebuilt: false, index_synced: opts.sync_index !== false };
}

export function monitorSnapshot(
  ws: string,
  index: WorkspaceIndex,
  sessions: Sessions,
  p: IndexRefresh & { project_id?: string; limit: number },
) {
  const refreshed = refresh(index, p);
  const live = new Map(sessions.list(ws, p.project_id).map((s) => [s.run_id, s]));
  const rows = index.runSummaries(p.project_id, p.limit).map((row) => {
    const session = live.get(String(row.run_id));
    return {
      ...row,
      run_status: row.status,
      session_ref: session?.session_ref ?? null,
      live_status: session?.status ?? null,
      live_exit_code: session?.exit_code ?? null,
      live_signal: session?.signal ?? null,
      live_error: session?.error ?? null,
    };
  });
  return { workspace_dir: ws, generated_at: new Date().toISOString(), ...refreshed, rows };
}

export function inboxSnapshot(
  ws: string,
  index: WorkspaceIndex,
  p: IndexRefresh & { project_id?: string; pending_limit: number; decisions_limit: number },
) {
  const refreshed = refresh(index, p);
  const projects = p.project_id ? [p.project_id] : listProjects(ws).map((x) => x.id);
  const pending = pendingApprovals(ws, projects)
    .slice(0, p.pending_limit)
    .map((a) => ({
      project_id: a.project_id,
      artifact_id: a.artifact_id,
      artifact_type: a.front_matter.type,
      title: a.front_matter.title ?? null,
      visibility: a.front_matter.visibility ?? null,
      produced_by: a.front_matter.produced_by ?? null,
      run_id: a.front_matter.run_id ?? null,
      created_at: a.front_matter.created_at ?? null,
    }));
  const types = new Map(projects.flatMap((x) => listArtifacts(ws, x)).map((a) => [a.artifact_id, a.front_matter.type]));
  const recent_decisions = listReviews(ws, p.decisions_limit).map((r) => {
    const subject = (r.subject ?? {}) as { kind?: string; artifact_id?: string };
    return {
      review_id: r.id,
      decision: r.decision,
      actor_id: r.actor_id,
      actor_role: r.actor_role,
      subject_kind: subject.kind ?? null,
      subject_artifact_id: subject.artifact_id ?? null,
      notes: r.notes ?? null,
      artifact_type: subject.artifact_id ? (types.get(subject.artifact_id) ?? null) : null,
    };
  });
  return { workspace_dir: ws, generated_at: new Date().toISOString(), ...refreshed, pending, recent_decisions };
}

export function uiSnapshot(
  ws: string,
  index: WorkspaceIndex,
  sessions: Sessions,
  p: IndexRefresh & { project_id?: string; monitor_limit: number; pending_limit: number; decisions_limit: number },
) {
  const monitor = monitorSnapshot(ws, index, sessions, { ...p, limit: p.monitor_limit });
  const review_inbox = inboxSnapshot(ws, index, { ...p, sync_index: false, refresh_index: false });
  const colleagues = listAgents(ws).map((agent) => {
    const runs = monitor.rows.filter((r) => (r as Record<string, unknown>).agent_id === agent.id);
    const active = runs.filter((r) => r.live_status === "running" || r.run_status === "running").length;
    const pending = review_inbox.pending.filter((x) => x.produced_by === agent.id).length;
    return {
      agent_id: agent.id,
      name: agent.name,
      role: agent.role,
      provider: agent.provider,
      team_id: agent.team_id ?? null,
      active_runs: active,
      total_runs: runs.length,
      pending_reviews: pending,
      status: active > 0 ? "active" : pending > 0 ? "needs_review" : "idle",
    };
  });
  return { workspace_dir: ws, generated_at: monitor.generated_at, monitor, review_inbox, colleagues };
}
