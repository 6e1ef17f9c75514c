// The approval gate every backend's questions go through: the thread's policy first, then a
// session grant or a workspace rule, and only then the clients (through the ApprovalBroker).
// Every answer, remembered or asked, is recorded as items and announced to subscribers.
import type { ApprovalDecision, ApprovalPolicy, ApprovalSource, Thread } from "../domain/model.js";
import type { NewEvent } from "../domain/events.js";
import type { TurnRecorder } from "../domain/turn-recorder.js";
import type { Store } from "../store/store.js";
import type { ApprovalAsk } from "../tools/tool.js";
import { ALL_DECISIONS, needsAsking, newApprovalRequestId, type ApprovalBroker, type GateSettings } from "./approvals.js";

/** What the gate needs of the running turn. */
export interface GatedTurn {
  readonly turnId: string;
  readonly signal: AbortSignal;
  readonly recorder: TurnRecorder;
  /** Called with +1 when a question goes to the clients and -1 when it is answered. */
  waiting(change: 1 | -1): void;
}

export interface ApprovalGateDeps {
  store: Store;
  broker: ApprovalBroker;
  emit(event: NewEvent): void;
  /** Resolves once every event committed so far has reached the listeners. */
  delivered(): Promise<void>;
  defaultTimeoutMs: number;
  /** The workspace's default policy for threads that set none. */
  workspacePolicy(workspacePath: string): ApprovalPolicy | undefined;
}

export async function approve(
  deps: ApprovalGateDeps,
  thread: Thread,
  turn: GatedTurn,
  ask: ApprovalAsk,
  callId: string,
): Promise<ApprovalDecision> {
  const { broker, emit } = deps;
  const { recorder, turnId } = turn;
  const config = thread.configuration ?? {};
  const settings: GateSettings = {
    policy: config.approvalPolicy ?? deps.workspacePolicy(thread.workspacePath) ?? "default",
    autoApproveTypes: config.autoApproveTypes ?? [],
    timeoutMs: config.approvalTimeoutMs ?? deps.defaultTimeoutMs,
  };
  if (!needsAsking(ask, settings)) return "accept";
  const requestId = newApprovalRequestId();
  // A remembered grant or rule answers without asking; every subscriber still hears of it.
  const remembered: { decision: ApprovalDecision; source: ApprovalSource } | undefined = broker.hasSessionGrant(thread.id, ask.scopeKey)
    ? { decision: "acceptForSession", source: "sessionGrant" }
    : (await deps.store.hasApprovalRule(thread.workspacePath, ask.scopeKey))
      ? { decision: "acceptAlways", source: "rule" }
      : undefined;
  if (remembered) {
    const response = recorder.record("approvalResponse", { requestId, ...remembered });
    emit({ type: "approval.resolved", threadId: thread.id, data: { turnId, itemId: response.id, requestId, ...remembered } });
    return remembered.decision;
  }

  const item = recorder.start("approvalRequest", { requestId, callId, ...ask });
  turn.waiting(1);
  // Every client has seen the items the question refers to before the question itself.
  await deps.delivered();
  const { decision, source } = await broker.ask(
    { ...ask, threadId: thread.id, turnId, itemId: item.id, callId, requestId, decisions: ALL_DECISIONS },
    settings,
    turn.signal,
  );
  recorder.complete(item, { decision });
  recorder.record("approvalResponse", { requestId, decision, source });
  emit({ type: "approval.resolved", threadId: thread.id, data: { turnId, itemId: item.id, requestId, decision, source } });
  turn.waiting(-1);

  if (decision === "acceptForSession") broker.grantForSession(thread.id, ask.scopeKey);
  if (decision === "acceptAlways") {
    emit({ type: "approval.ruleAdded", threadId: thread.id, data: { workspacePath: thread.workspacePath, scopeKey: ask.scopeKey } });
  }
  return decision;
}
