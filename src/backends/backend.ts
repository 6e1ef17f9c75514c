// The seam between the runtime and whatever runs a turn: the built-in engine or an external
// agent (Claude Code, Codex, any ACP agent). A backend turns a turn's input into items,
// approvals and usage through the TurnContext; the runtime records and delivers them the same
// way for every backend, so no face can tell which one ran the turn.
import type { Logger } from "../log.js";
import type {
  ApprovalDecision,
  BackendSession,
  BackendSpec,
  ClientMessage,
  InputPart,
  Item,
  PlanStep,
  Thread,
  TokenUsage,
  TurnError,
} from "../domain/model.js";
import type { TurnRecorder } from "../domain/turn-recorder.js";
import type { ApprovalAsk, ClientToolCall, ClientToolResult, ToolEnvironment, UserQuestion } from "../tools/tool.js";
import type { ThinkingMode } from "../providers/provider.js";

export type TurnOutcome = { status: "completed" } | { status: "cancelled"; reason: string } | { status: "failed"; error: TurnError };

/** What the runtime gives a backend for one turn. */
export interface TurnContext {
  readonly thread: Thread;
  /** The backend spec the turn runs on: the thread's own, or the server's default. */
  readonly backendSpec: BackendSpec;
  readonly turnId: string;
  readonly input: InputPart[];
  /**
   * The turn was cut when the process running it was lost, and continues here (cluster
   * failover, built-in engine only): `history()` includes what it recorded so far, input and
   * all, and the backend goes on from there without taking the input again.
   */
  readonly resume?: boolean;
  /** The conversation, for threads that keep their history on the client. */
  readonly messages?: ClientMessage[];
  /** Per-turn model selection (overrides the thread's configuration). */
  readonly provider?: string;
  readonly model?: string;
  /** Per-turn thinking mode for the built-in engine's model calls (other backends ignore it). */
  readonly thinking?: ThinkingMode;
  readonly recorder: TurnRecorder;
  /** Aborted when the turn is interrupted or the server shuts down. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Where tools read/write files and run commands, when a client attached one to the thread (else the disk). */
  environment(): ToolEnvironment | undefined;
  /** Items of the thread's earlier turns, oldest first (the built-in engine rebuilds history from them). */
  history(): Promise<Item[]>;
  /**
   * Asks for approval through the thread's policy, grants, rules and clients. Resolves with
   * the decision ("accept" when no question was needed); "cancel" means the turn is to end.
   */
  approve(ask: ApprovalAsk, callId: string): Promise<ApprovalDecision>;
  /**
   * Puts a question to the person following the thread (undefined: no answer came). Absent when
   * no client could answer questions when the turn started.
   */
  ask?(question: UserQuestion): Promise<string | undefined>;
  /** Calls a tool a client provides (configuration.dynamicTools) through the clients following the thread. */
  callClientTool?(call: ClientToolCall): Promise<ClientToolResult | undefined>;
  /** Inputs sent with turn/steer since the last call. */
  takeSteering(): InputPart[][];
  /** Adds one model call's usage (priced when the price is known) to the turn's total. */
  reportUsage(usage: TokenUsage): void;
  /** Replaces the thread's plan. */
  reportPlan(plan: { explanation?: string; steps: PlanStep[] }): void;
  /** Publishes the unified diff of every file the turn changed so far. */
  reportDiff(diff: string): void;
  /** The external agent's session for this thread, as last recorded (absent for a new one). */
  readonly session?: BackendSession;
  /** Records the external agent's session, so the thread resumes it after a restart. */
  recordSession(session: BackendSession): void;
}

export interface AgentBackend {
  /** The BackendSpec type this backend serves. */
  readonly type: BackendSpec["type"];
  /**
   * Runs one turn. Agent failures (cannot start, crashed, protocol error) resolve as a failed
   * outcome with a machine-readable code; the promise rejects only on a bug.
   */
  runTurn(ctx: TurnContext): Promise<TurnOutcome>;
  /**
   * Starts the thread's agent process ahead of its first turn (or finds it running), for
   * backends that keep one; says its process id.
   */
  warm?(thread: Thread, spec: BackendSpec): Promise<AgentProcessInfo>;
  /** Stops the thread's agent process, if one is running (thread deleted). */
  release(threadId: string): Promise<void>;
  /** Stops every agent process (shutdown). */
  close(): Promise<void>;
}

/** A thread's running agent process, as far as its backend can tell. */
export interface AgentProcessInfo {
  pid?: number;
  /** What the agent said of itself when it started (ACP: agentCapabilities and agentInfo of initialize). */
  capabilities?: Record<string, unknown>;
  agentInfo?: { name: string; version: string };
}

/** The backends a runtime can run turns on . */
export interface BackendSet {
  /** The backend for a spec, loaded on first use. */
  backendFor(spec: BackendSpec): Promise<AgentBackend>;
  /** What each backend type can do here, for discovery methods and the doctor. */
  availability(): Promise<BackendAvailability[]>;
  /** Stops the thread's agent process, if any. */
  release(threadId: string): Promise<void>;
  close(): Promise<void>;
}

/** What `backend/list` and `switchyard doctor` report about one backend. */
export interface BackendAvailability {
  type: BackendSpec["type"];
  available: boolean;
  /** The command that would run, when the backend runs one. */
  command?: string;
  version?: string;
  /** Why it is unavailable. */
  problem?: string;
  /** What the backend supports: "resume", "approvals", "reasoning", "plan", "usage", "cost", "images", ... */
  features: string[];
}

/** Failure codes a backend reports in TurnError.code, so clients can tell them apart. */
export const BACKEND_ERRORS = {
  /** The agent's executable was not found. */
  notFound: "backendNotFound",
  /** The agent process exited (message: exit code and the tail of its stderr). */
  exited: "backendExited",
  /** The agent spoke something this backend does not understand. */
  protocol: "backendProtocolError",
  /** The agent reported an error for the turn. */
  agent: "backendError",
} as const;

/** What every backend module is built with. */
export interface BackendDeps {
  log: Logger;
  /** Switchyard's environment; an agent inherits it, plus its spec's `env`. */
  env: NodeJS.ProcessEnv;
  /** Where live agent processes are registered, so a restart reaps those a crash left behind. */
  agentRegistryDir: string;
  /** How long an agent process is kept for an idle thread. */
  idleTimeoutMs: number;
}

/** An external backend's module, loaded on first use: `src/backends/<type>/index.ts`. */
export interface BackendModule {
  createBackend(deps: BackendDeps): AgentBackend;
  /** Whether the spec's agent can run here (binary found, version), without starting a session. */
  probe(spec: BackendSpec, deps: BackendDeps): Promise<BackendAvailability>;
}
