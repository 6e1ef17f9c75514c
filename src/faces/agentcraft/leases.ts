// Session leases (spec 003 §7.3–7.4): a started agent's sessions lent to clients. Each lease is
// a runtime thread of the agent's backend; while a connection holds it, the session's ACP
// updates stream to that connection and its approvals are asked there. A lease whose holder
// disconnects goes idle, is resumed by the same client id, and expires after its idle TTL.
import { randomBytes } from "node:crypto";
import type { Logger } from "../../log.js";
import type { RuntimeApi } from "../../runtime/api.js";
import type { ApprovalDecision } from "../../domain/model.js";
import type { ApprovalRequest } from "../../runtime/approvals.js";
import { decisionFor, PERMISSION_OPTIONS, SessionUpdateMapper } from "../acp/wire.js";
import { AgentCraftError } from "./errors.js";
import { sessionBackend } from "./launch.js";
import type { AgentManager } from "./manager.js";
import type { SessionLeaseInfo } from "./protocol.js";
import { promptThread } from "./wire.js";

export const DEFAULT_IDLE_TTL_MS = 30 * 60_000;
const SWEEP_INTERVAL_MS = 60_000;

/** The connection that holds a lease: where its updates and approval questions go. */
export interface LeaseHolder {
  readonly id: string;
  update(sessionId: string, update: unknown): void;
  requestPermission(
    params: { sessionId: string; toolCall: unknown; options: unknown[] },
    signal: AbortSignal,
  ): Promise<{ outcome: unknown }>;
}

interface Lease {
  info: SessionLeaseInfo;
  threadId: string;
  holder?: LeaseHolder;
  /** The client id that may resume it once idle. */
  resumeClientId: string;
  mapper: SessionUpdateMapper;
}

export class LeaseRegistry {
  private readonly leases = new Map<string, Lease>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly detachApprover: () => void;

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly manager: AgentManager,
    private readonly log: Logger,
  ) {
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    this.detachApprover = runtime.approvals.addApprover({
      canAnswer: (threadId) => this.byThread(threadId)?.holder !== undefined,
      ask: (request, signal) => this.ask(request, signal),
    });
  }

  create(agentName: string, clientId: string, holder: LeaseHolder, idleTtlMs = DEFAULT_IDLE_TTL_MS): SessionLeaseInfo {
    const meta = this.manager.instances.get(agentName);
    if (meta.processOwnership !== "managed") {
      throw new AgentCraftError(
        "AGENT_NOT_ATTACHED",
        `Agent "${agentName}" is not started by the daemon: run agentcraft agent start ${agentName}.`,
        {
          name: agentName,
        },
      );
    }
    // The same client coming back resumes its idle session.
    for (const lease of this.leases.values()) {
      if (
        lease.info.agentName === agentName &&
        lease.info.clientId === null &&
        lease.info.state === "idle" &&
        lease.resumeClientId === clientId
      ) {
        return this.hold(lease, clientId, holder);
      }
    }
    const sessionId = `lease_${randomBytes(8).toString("hex")}`;
    // Approvals go to the holder (the daemon's default for its own sessions is to approve).
    const thread = this.manager.newThread(meta, sessionBackend(this.manager.command(meta, sessionId)), undefined, "default");
    const now = new Date().toISOString();
    const lease: Lease = {
      info: {
        sessionId,
        agentName,
        clientId,
        state: "active",
        createdAt: now,
        lastActivityAt: now,
        idleTtlMs,
      },
      threadId: thread.id,
      mapper: new SessionUpdateMapper(meta.workspaceDir),
      resumeClientId: clientId,
    };
    this.leases.set(lease.info.sessionId, lease);
    return this.hold(lease, clientId, holder);
  }

  private hold(lease: Lease, clientId: string, holder: LeaseHolder): SessionLeaseInfo {
    lease.holder = holder;
    lease.resumeClientId = clientId;
    lease.info = { ...lease.info, clientId, state: "active", lastActivityAt: new Date().toISOString() };
    return lease.info;
  }

  /** The thread of a lease the caller holds. */
  threadOf(sessionId: string, holder: LeaseHolder): string {
    return this.held(sessionId, holder).threadId;
  }

  async prompt(sessionId: string, text: string, holder: LeaseHolder): Promise<{ response: string; stopReason: string }> {
    const lease = this.held(sessionId, holder);
    this.touch(lease);
    const result = await promptThread(this.runtime, lease.threadId, text, {
      onEvent: (event) => {
        for (const update of lease.mapper.fromEvent(event, true)) lease.holder?.update(sessionId, update);
      },
    });
    this.touch(lease);
    return { response: result.text, stopReason: result.status === "cancelled" ? "cancelled" : "end_turn" };
  }

  async cancel(sessionId: string, holder: LeaseHolder): Promise<void> {
    const lease = this.held(sessionId, holder);
    if (this.runtime.runtimeState(lease.threadId).running) await this.runtime.interrupt(lease.threadId);
  }

  async close(sessionId: string, holder: LeaseHolder): Promise<void> {
    const lease = this.held(sessionId, holder);
    await this.end(lease);
  }

  list(agentName?: string): SessionLeaseInfo[] {
    return [...this.leases.values()].map((l) => l.info).filter((info) => agentName === undefined || info.agentName === agentName);
  }

  /** The holder went away: its leases go idle, their running prompts are interrupted. */
  released(holder: LeaseHolder): void {
    for (const lease of this.leases.values()) {
      if (lease.holder !== holder) continue;
      lease.holder = undefined;
      lease.info = { ...lease.info, clientId: null, state: "idle", lastActivityAt: new Date().toISOString() };
      if (this.runtime.runtimeState(lease.threadId).running) void this.runtime.interrupt(lease.threadId).catch(() => undefined);
    }
  }

  /** Leases of an agent that stopped end with it. */
  async endAll(agentName: string): Promise<void> {
    for (const lease of [...this.leases.values()]) if (lease.info.agentName === agentName) await this.end(lease);
  }

  dispose(): void {
    clearInterval(this.sweeper);
    this.detachApprover();
  }

  private async sweep(now = Date.now()): Promise<void> {
    for (const lease of [...this.leases.values()]) {
      if (lease.info.state === "idle" && now - Date.parse(lease.info.lastActivityAt) >= lease.info.idleTtlMs) {
        this.log.info({ sessionId: lease.info.sessionId }, "session lease expired");
        await this.end(lease);
      }
    }
  }

  private async end(lease: Lease): Promise<void> {
    lease.info = { ...lease.info, state: "expired", clientId: null };
    this.leases.delete(lease.info.sessionId);
    await this.runtime.stopAgent(lease.threadId).catch(() => undefined);
  }

  private held(sessionId: string, holder: LeaseHolder): Lease {
    const lease = this.leases.get(sessionId);
    if (!lease) throw new AgentCraftError("GENERIC_BUSINESS", `No session ${sessionId}: it was closed or expired.`, { sessionId });
    if (lease.holder !== holder) {
      throw new AgentCraftError("PROXY_SESSION_CONFLICT", `Session ${sessionId} is held by another client.`, { sessionId });
    }
    return lease;
  }

  private touch(lease: Lease): void {
    lease.info = { ...lease.info, lastActivityAt: new Date().toISOString() };
  }

  private byThread(threadId: string): Lease | undefined {
    for (const lease of this.leases.values()) if (lease.threadId === threadId) return lease;
    return undefined;
  }

  private async ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const lease = this.byThread(request.threadId);
    if (!lease?.holder) throw new Error("the session has no holder");
    const toolCall = { toolCallId: request.callId, title: request.operation, status: "pending" };
    const response = await lease.holder.requestPermission(
      { sessionId: lease.info.sessionId, toolCall, options: PERMISSION_OPTIONS },
      signal,
    );
    const outcome = response.outcome as Parameters<typeof decisionFor>[0];
    return outcome && typeof outcome === "object" && "outcome" in outcome ? decisionFor(outcome) : "decline";
  }
}
