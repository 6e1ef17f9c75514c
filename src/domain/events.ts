// Runtime events. Every state change of a thread is one of these; the store appends them to
// the event log (the source of truth) and derives its tables from them.
import type {
  AgentMode,
  BackendSession,
  ApprovalDecision,
  ApprovalSource,
  Item,
  Plan,
  QueuedInput,
  Thread,
  ThreadConfiguration,
  ThreadRuntimeState,
  ThreadStatus,
  TokenUsage,
  Turn,
  TurnError,
} from "./model.js";

export type DeltaKind = "agentMessage" | "reasoning" | "commandOutput" | "toolArguments";

export interface EventPayloads {
  "thread.created": { thread: Thread };
  "thread.resumed": { lastActiveAt: string };
  "thread.renamed": { displayName: string };
  "thread.configured": { configuration: ThreadConfiguration };
  "thread.modeChanged": { mode: AgentMode };
  /** thread/pause, thread/archive and their inverses. */
  "thread.statusChanged": { status: ThreadStatus };
  "thread.backendSession": { session: BackendSession };
  "thread.deleted": Record<string, never>;
  "thread.runtimeChanged": { runtime: ThreadRuntimeState };
  "thread.queueUpdated": { queuedInputs: QueuedInput[] };
  "turn.started": { turn: Turn };
  "turn.completed": { turnId: string; completedAt: string; tokenUsage?: TokenUsage };
  "turn.failed": { turnId: string; completedAt: string; error: TurnError; tokenUsage?: TokenUsage };
  "turn.cancelled": { turnId: string; completedAt: string; reason: string; tokenUsage?: TokenUsage };
  "turn.diffUpdated": { turnId: string; diff: string };
  "turn.planUpdated": { turnId: string; plan: Plan };
  "item.started": { item: Item };
  "item.delta": { turnId: string; itemId: string; kind: DeltaKind; delta: string; stream?: "stdout" | "stderr" };
  "item.completed": { item: Item };
  "approval.resolved": {
    turnId: string;
    itemId: string;
    requestId: string;
    decision: ApprovalDecision;
    source: ApprovalSource;
  };
  "approval.ruleAdded": { workspacePath: string; scopeKey: string };
  /** `usage` is the turn's total so far; `delta` the model call that changed it (absent in older logs). */
  "usage.updated": { turnId: string; usage: TokenUsage; delta?: TokenUsage };
}

export type EventType = keyof EventPayloads;

export interface NewEvent<T extends EventType = EventType> {
  type: T;
  threadId: string;
  data: EventPayloads[T];
}

/** An event as stored: `seq` is global, strictly increasing, and never reused. */
export type RuntimeEvent = { [T in EventType]: NewEvent<T> & { seq: number; ts: string } }[EventType];

export type EventOf<T extends EventType> = Extract<RuntimeEvent, { type: T }>;
