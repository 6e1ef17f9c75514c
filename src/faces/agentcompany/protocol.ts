// AgentCompany JSON-RPC protocol v1 (local stdio): the methods Switchyard serves so far, with
// the params of the protocol document (snake_case) and result shapes of the original.
import { z } from "zod";
import type { ProtocolTable } from "../../rpc/protocol-table.js";
import { EventEnvelope } from "./run-log.js";
import { Validation, workspaceDir, WorkspaceRequests, Ws } from "./workspace-protocol.js";

const limit = (max: number, fallback: number) => z.number().int().positive().max(max).default(fallback);

const Run = z
  .object({
    id: z.string(),
    project_id: z.string(),
    agent_id: z.string(),
    provider: z.string(),
    status: z.string(),
    created_at: z.string(),
  })
  .passthrough();
const Session = z
  .object({
    session_ref: z.string(),
    project_id: z.string(),
    run_id: z.string(),
    mode: z.string(),
    status: z.string(),
    started_at: z.string(),
  })
  .passthrough();
const Obj = z.record(z.string(), z.unknown());
const Refresh = { refresh_index: z.boolean().optional(), sync_index: z.boolean().optional() };
const ActorParams = {
  actor_id: z.string().default("human"),
  actor_role: z.enum(["human", "ceo", "director", "manager", "worker"]).default("human"),
  team_id: z.string().optional(),
};
const SyncCounts = z.object({ runs: z.number(), events: z.number(), parse_errors: z.number() });
const IndexedRun = z.record(z.string(), z.unknown());

export const AgentCompanyRequests = {
  ...WorkspaceRequests,
  "workspace.doctor": {
    params: Ws.extend({ rebuild_index: z.boolean().optional(), sync_index: z.boolean().optional() }),
    result: z.object({
      workspace_dir: z.string(),
      ok: z.boolean(),
      validation: Validation,
      index: z.object({ rebuilt: z.boolean(), synced: z.boolean(), stats: z.record(z.string(), z.number()) }),
    }),
    description: "Validation plus the index: rebuilt or synced when asked, and its counts.",
  },
  "run.create": {
    params: Ws.extend({ project_id: z.string(), agent_id: z.string(), provider: z.string().default("switchyard") }),
    result: z.object({ run_id: z.string(), project_id: z.string(), events_relpath: z.string(), run: Run }),
    description: "Creates a run (run.yaml, events.jsonl with run.started).",
  },
  "run.list": {
    params: Ws.extend({ project_id: z.string().optional() }),
    result: z.array(Run),
    description: "Every run, from the files, oldest first.",
  },
  "run.replay": {
    params: Ws.extend({
      project_id: z.string(),
      run_id: z.string(),
      tail: z.number().int().positive().optional(),
      mode: z.enum(["raw", "verified"]).default("raw"),
    }),
    result: z.object({
      project_id: z.string(),
      run_id: z.string(),
      mode: z.string(),
      events: z.array(z.record(z.string(), z.unknown())),
      parse_errors: z.array(z.object({ seq: z.number(), error: z.string(), raw_line: z.string() })),
      verification: z
        .object({ ok: z.boolean(), checked: z.number(), first_broken: z.object({ seq: z.number(), reason: z.string() }).optional() })
        .optional(),
    }),
    description: "A run's events as stored; verified checks the hash chain and names the first broken link.",
  },
  "session.launch": {
    params: Ws.extend({
      project_id: z.string(),
      run_id: z.string(),
      argv: z.array(z.string()).min(1).optional().describe("A plain command; without it, the run's provider adapter runs prompt_text."),
      repo_id: z.string().optional().describe("A repository linked in .local/machine.yaml repo_roots; the session runs there."),
      workdir_rel: z.string().optional(),
      prompt_text: z.string().optional(),
      budget: z
        .object({ hard_tokens: z.number().int().positive().optional(), hard_cost_usd: z.number().positive().optional() })
        .optional()
        .describe("Hard limits of an agent session: past one it is stopped, with budget.exceeded."),
      model: z.string().optional(),
      stdin_text: z.string().optional(),
      env: z.record(z.string(), z.string()).optional(),
    }),
    result: Session,
    description: "Starts the run's session: a command, or an agent adapter (a runtime thread, visible from every face).",
  },
  "session.list": {
    params: Ws.extend({ project_id: z.string().optional() }),
    result: z.array(Session),
    description: "Every session record.",
  },
  "session.poll": { params: Ws.extend({ session_ref: z.string() }), result: Session, description: "A session's status now." },
  "session.collect": {
    params: Ws.extend({ session_ref: z.string(), wait_ms: z.number().int().nonnegative().max(600_000).default(30_000) }),
    result: Session.extend({ outputs: z.record(z.string(), z.string()) }),
    description: "Waits for the session's end (at most wait_ms), then its record and outputs (stdout, stderr, last message).",
  },
  "session.stop": {
    params: Ws.extend({ session_ref: z.string() }),
    result: Session,
    description: "Stops a running session (run.stopped).",
  },
  "adapter.status": {
    params: Ws.partial(),
    result: z.array(
      z.object({
        name: z.string(),
        provider: z.string(),
        mode: z.string(),
        available: z.boolean(),
        reason: z.string().optional(),
        capabilities: z.record(z.string(), z.unknown()),
      }),
    ),
    description: "Each adapter: whether its agent can run here, and what it supports.",
  },
  "inbox.list_reviews": { params: Ws.extend({ limit: limit(1000, 200) }), result: z.array(Obj), description: "Reviews, newest first." },
  "inbox.list_help_requests": {
    params: Ws.extend({ limit: limit(1000, 200) }),
    result: z.array(Obj),
    description: "Help requests (front matter, and whether the Response section is filled), newest first.",
  },
  "inbox.snapshot": {
    params: Ws.extend({ project_id: z.string().optional(), pending_limit: limit(1000, 100), decisions_limit: limit(1000, 50), ...Refresh }),
    result: Obj,
    description: "Pending approvals (memory deltas, milestone reports without a review) and recent decisions.",
  },
  "artifact.read": {
    params: Ws.extend({ project_id: z.string(), artifact_id: z.string(), ...ActorParams }),
    result: z.object({ artifact_id: z.string(), project_id: z.string(), relpath: z.string(), front_matter: Obj, body: z.string() }),
    description: "An artifact, if its visibility lets the actor read it (else POLICY_DENIED).",
  },
  "memory.propose_delta": {
    params: Ws.extend({
      project_id: z.string(),
      title: z.string().min(1),
      scope_kind: z.enum(["project_memory", "agent_guidance"]),
      scope_ref: z.string().optional(),
      sensitivity: z.enum(["public", "internal", "restricted"]).default("internal"),
      rationale: z.string().optional(),
      under_heading: z.string().min(1),
      insert_lines: z.array(z.string()).min(1),
      visibility: z.enum(["private_agent", "team", "managers", "org"]).default("managers"),
      produced_by: z.string(),
      run_id: z.string().optional(),
    }),
    result: z.object({ artifact_id: z.string(), target_file: z.string(), patch_file: z.string() }),
    description:
      "Writes a memory delta artifact and its unified-diff patch; content that looks like a secret is refused (SECRET_DETECTED).",
  },
  "memory.approve_delta": {
    params: Ws.extend({
      project_id: z.string(),
      artifact_id: z.string(),
      decision: z.enum(["approved", "denied"]).default("approved"),
      notes: z.string().optional(),
      ...ActorParams,
    }),
    result: z.object({ review_id: z.string(), decision: z.string(), applied: z.boolean() }),
    description: "A director (or above) approves (the patch is applied) or denies a memory delta; the review is recorded.",
  },
  "milestone.approve": {
    params: Ws.extend({
      project_id: z.string(),
      task_id: z.string(),
      milestone_id: z.string(),
      report_artifact_id: z.string(),
      notes: z.string().optional(),
      ...ActorParams,
    }),
    result: z.object({ review_id: z.string(), task_id: z.string(), milestone_id: z.string(), status: z.string() }),
    description: "A manager (or above) approves a milestone from its report; coding milestones need a .patch and a tests artifact.",
  },
  "agent.record_mistake": {
    params: Ws.extend({
      agent_id: z.string(),
      mistake_key: z.string().min(1),
      summary: z.string().optional(),
      prevention_rule: z.string().optional(),
      observation: z.string().optional(),
    }),
    result: z.object({ agent_id: z.string(), mistake_key: z.string(), count: z.number() }),
    description: "Counts a mistake in the agent's mistakes.yaml.",
  },
  "agent.refresh_context": {
    params: Ws.extend({
      agent_id: z.string(),
      project_id: z.string().optional(),
      max_tasks: limit(1000, 20),
      max_scope_paths: limit(1000, 20),
    }),
    result: z.object({ agent_id: z.string(), context_index_relpath: z.string(), tasks: z.number(), runs: z.number() }),
    description: "Rewrites the agent's context_index.md: its tasks, recent runs and memory files.",
  },
  "monitor.snapshot": {
    params: Ws.extend({ project_id: z.string().optional(), limit: limit(5000, 200), ...Refresh }),
    result: Obj,
    description: "Runs with their last event, counts, usage and live session status.",
  },
  "ui.snapshot": {
    params: Ws.extend({
      project_id: z.string().optional(),
      monitor_limit: limit(5000, 200),
      pending_limit: limit(1000, 100),
      decisions_limit: limit(1000, 50),
      ...Refresh,
    }),
    result: Obj,
    description: "The monitor, the review inbox and the colleagues (agents with their activity), in one answer.",
  },
  "index.list_reviews": { params: Ws.extend({ limit: limit(1000, 200) }), result: z.array(Obj), description: "Reviews, newest first." },
  "index.list_help_requests": {
    params: Ws.extend({ limit: limit(1000, 200) }),
    result: z.array(Obj),
    description: "Help requests, newest first.",
  },
  "index.rebuild": { params: Ws, result: SyncCounts, description: "Recreates .local/index.sqlite from the files alone." },
  "index.sync": { params: Ws, result: SyncCounts, description: "Indexes what was appended since the last sync." },
  "index.stats": {
    params: Ws,
    result: z.object({ runs: z.number(), events: z.number(), event_parse_errors: z.number() }),
    description: "Row counts of the index.",
  },
  "index.list_runs": {
    params: Ws.extend({ project_id: z.string().optional(), limit: limit(1000, 200) }),
    result: z.array(IndexedRun),
    description: "Indexed runs, newest first.",
  },
  "index.list_events": {
    params: Ws.extend({
      project_id: z.string().optional(),
      run_id: z.string().optional(),
      since_seq: z.number().int().nonnegative().optional(),
      limit: limit(5000, 200),
      order: z.enum(["asc", "desc"]).default("asc"),
    }),
    result: z.array(z.object({ project_id: z.string(), run_id: z.string(), seq: z.number(), type: z.string(), event: EventEnvelope })),
    description: "Indexed events with their envelope as persisted.",
  },
  "index.list_event_parse_errors": {
    params: Ws.extend({ limit: limit(1000, 200) }),
    result: z.array(IndexedRun),
    description: "Lines of events.jsonl files that could not be read.",
  },
  "events.subscribe": {
    params: z.object({
      subscription_id: z.string().min(1).optional(),
      workspace_dir: workspaceDir.optional(),
      project_id: z.string().optional(),
      run_id: z.string().optional(),
      event_types: z.array(z.string()).optional(),
      backfill_limit: z.number().int().nonnegative().max(5000).optional(),
    }),
    result: z.object({ subscription_id: z.string(), backfilled: z.number(), resumed_after_ts: z.number().optional() }),
    description:
      "Streams events.notification for new events; backfill_limit replays recent ones first (no gap, no duplicate). Re-subscribing with the id of an acknowledged subscription resumes after its last ack.",
  },
  "events.unsubscribe": {
    params: z.object({ subscription_id: z.string() }),
    result: z.object({ removed: z.boolean() }),
    description: "Ends a subscription of this connection (its acknowledged position stays).",
  },
  "events.ack": {
    params: z.object({ subscription_id: z.string(), last_ack_ts_monotonic_ms: z.number().optional() }),
    result: z.object({ ok: z.boolean() }),
    description: "Records the position the client has processed (persisted in the workspace).",
  },
} as const;

export const AgentCompanyNotifications = {
  "events.notification": z
    .object({ subscription_id: z.string(), project_id: z.string(), event: EventEnvelope })
    .describe("One persisted run event, verbatim, for a subscription whose filters it matches."),
} as const;

export const agentCompanyProtocol: ProtocolTable = {
  name: "agentcompany",
  title: "AgentCompany protocol v1",
  source: "src/faces/agentcompany/protocol.ts",
  requests: AgentCompanyRequests,
  notifications: AgentCompanyNotifications,
  serverRequests: {},
  objects: { EventEnvelope },
};
