// One AgentCompany connection: the v1 methods served so far, over the shared services of the
// server (write locks, the event bus, open indexes). Writes to one workspace run one at a time.
import { randomBytes } from "node:crypto";
import type { RpcHandlers } from "../../rpc/connection.js";
import { dispatchRequests } from "../../rpc/methods.js";
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import type { RuntimeApi } from "../../runtime/api.js";
import type { FaceContext } from "../face.js";
import { toRpcError } from "./errors.js";
import { WorkspaceIndex } from "./index-db.js";
import { AgentCompanyRequests } from "./protocol.js";
import {
  approveDelta,
  approveMilestone,
  listHelpRequests,
  listReviews,
  proposeDelta,
  readArtifact,
  recordMistake,
  refreshContext,
} from "./governance.js";
import { runLogFor, type RunLogStore } from "./run-log.js";
import type { Logger } from "../../log.js";
import { createRun, eventsFile, listRuns, replayRun } from "./runs.js";
import { inboxSnapshot, monitorSnapshot, uiSnapshot } from "./snapshots.js";
import { Sessions } from "./sessions.js";
import { EventBus, Subscriptions } from "./subscriptions.js";
import { ADAPTERS } from "./wire.js";
import { requireWorkspace, validateWorkspace, workspaceLocks } from "./workspace.js";
import { workspaceHandlers } from "./workspace-requests.js";

/** What every connection of one server shares. */
class CompanyServices {
  readonly locks = workspaceLocks;
  readonly bus = new EventBus();
  readonly sessions: Sessions;
  private readonly indexes = new Map<string, WorkspaceIndex>();
  /** Where run logs are kept besides their files. */
  readonly runLogStore: RunLogStore;

  constructor(
    readonly runtime: RuntimeApi,
    log: Logger,
  ) {
    this.runLogStore = { logs: runtime.logs, log };
    this.sessions = new Sessions(runtime, this.runLogStore, (workspace_dir, project_id, run_id, seq, event) =>
      this.bus.emit("event", { workspace_dir, project_id, run_id, seq, event }),
    );
  }

  /** A governance decision about a run's output, recorded in the run's log. */
  recordDecision(ws: string, projectId: string, runId: string, decision: Record<string, unknown>): void {
    const log = runLogFor(this.runLogStore, eventsFile(ws, projectId, runId), { run_id: runId, session_ref: `local_${runId}` });
    for (const event of [
      { type: "policy.decision", payload: { allowed: true, action: "approve", ...decision } },
      { type: "approval.decided", payload: decision, actor: String(decision.actor_id) },
    ]) {
      const { seq, envelope } = log.append(event);
      this.bus.emit("event", { workspace_dir: ws, project_id: projectId, run_id: runId, seq, event: envelope });
    }
  }

  index(ws: string): WorkspaceIndex {
    let index = this.indexes.get(ws);
    if (!index) {
      index = new WorkspaceIndex(ws);
      this.indexes.set(ws, index);
    }
    return index;
  }
}

const servicesByRuntime = new WeakMap<RuntimeApi, CompanyServices>();

export function openAgentCompany({ runtime, connection, log }: FaceContext): RpcHandlers {
  let services = servicesByRuntime.get(runtime);
  if (!services) {
    services = new CompanyServices(runtime, log);
    servicesByRuntime.set(runtime, services);
  }
  const { locks, bus } = services;
  const index = (dir: string): WorkspaceIndex => services.index(requireWorkspace(dir));
  const subscriptions = new Subscriptions(bus, (subscriptionId, e) =>
    connection.notify("events.notification", { subscription_id: subscriptionId, project_id: e.project_id, event: e.event }),
  );
  connection.onClose(() => subscriptions.close());

  const handlers: RequestHandlers<typeof AgentCompanyRequests> = {
    ...workspaceHandlers,
    "workspace.doctor": ({ workspace_dir, rebuild_index, sync_index }) => {
      const ws = requireWorkspace(workspace_dir);
      const validation = validateWorkspace(ws);
      const idx = services.index(ws);
      if (rebuild_index) idx.rebuild();
      else if (sync_index !== false) idx.sync();
      return {
        workspace_dir: ws,
        ok: validation.valid,
        validation,
        index: { rebuilt: rebuild_index === true, synced: !rebuild_index && sync_index !== false, stats: idx.stats() },
      };
    },
    "run.create": ({ workspace_dir, project_id, agent_id, provider }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => {
        const { run, started } = createRun(services.runLogStore, ws, { project_id, agent_id, provider });
        bus.emit("event", { workspace_dir: ws, project_id, run_id: run.id, seq: 1, event: started });
        return { run_id: run.id, project_id, events_relpath: run.events_relpath, run };
      });
    },
    "run.list": ({ workspace_dir, project_id }) => listRuns(requireWorkspace(workspace_dir), project_id),
    "run.replay": ({ workspace_dir, project_id, run_id, tail, mode }) =>
      replayRun(services.runLogStore, requireWorkspace(workspace_dir), project_id, run_id, { mode, ...(tail ? { tail } : {}) }),
    "session.launch": ({ workspace_dir, ...params }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => services.sessions.launch(ws, params));
    },
    "session.list": ({ workspace_dir, project_id }) => services.sessions.list(requireWorkspace(workspace_dir), project_id),
    "session.poll": ({ workspace_dir, session_ref }) => services.sessions.require(requireWorkspace(workspace_dir), session_ref),
    "session.collect": ({ workspace_dir, session_ref, wait_ms }) =>
      services.sessions.collect(requireWorkspace(workspace_dir), session_ref, wait_ms),
    "session.stop": ({ workspace_dir, session_ref }) => services.sessions.stop(requireWorkspace(workspace_dir), session_ref),
    "adapter.status": async () => {
      const backends = await runtime.listBackends();
      return Object.entries(ADAPTERS).map(([name, adapter]) => {
        const backend = adapter.backend ? backends.find((b) => b.type === adapter.backend?.type) : undefined;
        const features = backend?.features ?? [];
        return {
          name,
          provider: adapter.provider,
          mode: adapter.mode,
          available: backend?.available === true,
          ...(!adapter.backend
            ? { reason: "Switchyard has no backend for this provider yet" }
            : backend?.problem
              ? { reason: backend.problem }
              : {}),
          capabilities: {
            supports_streaming_events: true,
            supports_resumable_session: features.includes("resume"),
            supports_structured_output: false,
            supports_token_usage: features.includes("usage"),
            supports_patch_export: false,
            supports_interactive_approval_callbacks: features.includes("approvals"),
            supports_worktree_isolation: "unsupported",
          },
        };
      });
    },
    "inbox.list_reviews": ({ workspace_dir, limit }) => listReviews(requireWorkspace(workspace_dir), limit),
    "inbox.list_help_requests": ({ workspace_dir, limit }) => listHelpRequests(requireWorkspace(workspace_dir), limit),
    "index.list_reviews": ({ workspace_dir, limit }) => listReviews(requireWorkspace(workspace_dir), limit),
    "index.list_help_requests": ({ workspace_dir, limit }) => listHelpRequests(requireWorkspace(workspace_dir), limit),
    "inbox.snapshot": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return inboxSnapshot(ws, services.index(ws), p);
    },
    "monitor.snapshot": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return monitorSnapshot(ws, services.index(ws), services.sessions, p);
    },
    "ui.snapshot": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return uiSnapshot(ws, services.index(ws), services.sessions, p);
    },
    "artifact.read": ({ workspace_dir, project_id, artifact_id, ...actor }) =>
      readArtifact(requireWorkspace(workspace_dir), project_id, artifact_id, actor),
    "memory.propose_delta": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => proposeDelta(ws, p));
    },
    "memory.approve_delta": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => {
        const { run_id, ...result } = approveDelta(ws, p);
        if (run_id)
          services.recordDecision(ws, p.project_id, run_id, {
            kind: "memory_delta",
            artifact_id: p.artifact_id,
            decision: result.decision,
            review_id: result.review_id,
            actor_id: p.actor_id,
            actor_role: p.actor_role,
          });
        return result;
      });
    },
    "milestone.approve": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => {
        const { run_id, ...result } = approveMilestone(ws, p);
        if (run_id)
          services.recordDecision(ws, p.project_id, run_id, {
            kind: "milestone",
            artifact_id: p.report_artifact_id,
            decision: "approved",
            review_id: result.review_id,
            actor_id: p.actor_id,
            actor_role: p.actor_role,
          });
        return result;
      });
    },
    "agent.record_mistake": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => recordMistake(ws, p));
    },
    "agent.refresh_context": ({ workspace_dir, ...p }) => {
      const ws = requireWorkspace(workspace_dir);
      return locks.write(ws, () => refreshContext(ws, p, (agentId) => listRuns(ws).filter((r) => r.agent_id === agentId)));
    },
    "index.rebuild": ({ workspace_dir }) => index(workspace_dir).rebuild(),
    "index.sync": ({ workspace_dir }) => index(workspace_dir).sync(),
    "index.stats": ({ workspace_dir }) => index(workspace_dir).stats(),
    "index.list_runs": ({ workspace_dir, project_id, limit }) => index(workspace_dir).listRuns(project_id, limit),
    "index.list_events": ({ workspace_dir, project_id, run_id, since_seq, limit, order }) =>
      index(workspace_dir)
        .listEvents({
          ...(project_id ? { project_id } : {}),
          ...(run_id ? { run_id } : {}),
          ...(since_seq !== undefined ? { since_seq } : {}),
          limit,
          order,
        })
        .map(({ project_id: p, run_id: r, seq, type, event }) => ({ project_id: p, run_id: r, seq, type, event })),
    "index.list_event_parse_errors": ({ workspace_dir, limit }) => index(workspace_dir).listParseErrors(limit),
    "events.subscribe": ({ subscription_id, workspace_dir, project_id, run_id, event_types, backfill_limit }) => {
      const ws = workspace_dir ? requireWorkspace(workspace_dir) : undefined;
      const id = subscription_id ?? `sub_${Date.now()}_${randomBytes(4).toString("hex")}`;
      return subscriptions.subscribe(
        id,
        {
          ...(ws ? { workspace_dir: ws } : {}),
          ...(project_id ? { project_id } : {}),
          ...(run_id ? { run_id } : {}),
          ...(event_types ? { event_types } : {}),
        },
        { ...(backfill_limit ? { backfillLimit: backfill_limit } : {}), ...(ws ? { index: services.index(ws) } : {}) },
      );
    },
    "events.unsubscribe": ({ subscription_id }) => ({ removed: subscriptions.unsubscribe(subscription_id) }),
    "events.ack": ({ subscription_id, last_ack_ts_monotonic_ms }) => {
      subscriptions.ack(subscription_id, last_ack_ts_monotonic_ms);
      return { ok: true };
    },
  };
  return { onRequest: dispatchRequests(AgentCompanyRequests, handlers, toRpcError) };
}
