// The runtime as faces see it: thread and turn calls, the committed event stream, approvals.
// Faces hold this interface, never the Runtime class, so a face can run in process or, later,
// against a remote Switchyard through the typed client.
import type { AgentProcessInfo, BackendAvailability } from "../backends/backend.js";
import type { RuntimeEvent } from "../domain/events.js";
import type {
  AgentMode,
  InputPart,
  ItemType,
  Plan,
  QueuedInput,
  Thread,
  ThreadConfiguration,
  ThreadRuntimeState,
  TokenUsage,
  Turn,
} from "../domain/model.js";
import type { ListedModel, ListOptions } from "../providers/model-catalog.js";
import type { EventCursor, StorageStatus, Store, TurnItemsJson, ThreadFilter, ThreadPage } from "../store/store.js";
import type { FaceState } from "../store/face-state.js";
import type { AnyTool, ToolEnvironment } from "../tools/tool.js";
import type { Approver } from "./approvals.js";
import type { ModelSelection, RuntimeListener, StartThreadParams, StartTurnParams } from "./runtime.js";
import type { WorkspaceResources } from "../workspace/index.js";
import type { CommandExecution } from "./command-execution.js";
import type { CronService } from "../automation/cron.js";
import type { HeartbeatService } from "../automation/heartbeat.js";
import type { ChannelRunner } from "../automation/channels.js";

export type { CommandExecution, ModelSelection, RuntimeListener, StartThreadParams, StartTurnParams, StorageStatus };

export interface ToolSummary {
  name: string;
  description: string;
  kind: AnyTool["kind"];
  parameters: Record<string, unknown>;
}

/** What `enqueue` did: started a turn with the input, or queued it (the thread's queue after). */
export interface Enqueued {
  turn?: Turn;
  queuedInput?: QueuedInput;
  queuedInputs: QueuedInput[];
}

export interface RuntimeApi {
  // ---- events ----
  /** Receives every event once it is committed to the log, in seq order. */
  subscribe(listener: RuntimeListener): () => void;
  /**
   * A client here follows the thread: every event of it reaches `subscribe`, deltas included
   * (in a cluster, a node reads other nodes' deltas only of threads its clients follow). Returns
   * the release, for when the client stops following (or goes).
   */
  follow(threadId: string): () => void;
  /** The seq of the thread's latest event this process knows of: "now", for following from now on. */
  lastSeq(threadId: string): number;
  /** The thread's events after `afterSeq`, for a client catching up (throws replayGap past the log's end). */
  eventsAfter(threadId: string, afterSeq: number, limit?: number): Promise<RuntimeEvent[]>;
  /**
   * The events of each cursor's thread after its seq, at most `limitEach` each, in one read:
   * a connection catching up on threads it was sent events of (their seqs are in the log).
   */
  eventsAfterEach(cursors: readonly EventCursor[], limitEach: number): Promise<Map<string, RuntimeEvent[]>>;
  /** Whether the data directory can be written; while not, writes are refused (storageUnavailable). */
  storageStatus(): StorageStatus;
  /** Called when the storage status changes (not an event of the log: it could not be written). */
  onStorageStatus(listener: (status: StorageStatus) => void): () => void;

  // ---- threads ----
  startThread(params: StartThreadParams): Thread;
  forkThread(threadId: string, atTurnId?: string): Promise<Thread>;
  /** Throws threadNotFound. */
  getThread(threadId: string): Promise<Thread>;
  findThread(threadId: string): Promise<Thread | undefined>;
  listThreads(filter: ThreadFilter, page: { limit: number; cursor?: string }): Promise<ThreadPage>;
  resumeThread(threadId: string): Promise<Thread>;
  renameThread(threadId: string, displayName: string): Promise<Thread>;
  configureThread(threadId: string, changes: ThreadConfiguration): Promise<Thread>;
  setMode(threadId: string, mode: AgentMode): Promise<Thread>;
  pauseThread(threadId: string): Promise<Thread>;
  unpauseThread(threadId: string): Promise<Thread>;
  archiveThread(threadId: string): Promise<Thread>;
  unarchiveThread(threadId: string): Promise<Thread>;
  deleteThread(threadId: string): Promise<void>;
  turnsOf(threadId: string, withItems?: boolean): Promise<Turn[]>;
  /** Each turn's items as stored JSON, without the `omit` types: for fast reads of huge threads (Store.itemsJsonByTurn). */
  itemsJsonByTurn(threadId: string, omit?: readonly ItemType[]): Promise<TurnItemsJson[]>;
  /** A turn, with its items unless `withItems` is false (a turn's end needs only the turn). */
  findTurn(turnId: string, opts?: { withItems?: boolean }): Promise<Turn | undefined>;
  runtimeState(threadId: string): ThreadRuntimeState;
  latestPlan(threadId: string): Promise<Plan | undefined>;
  threadUsage(threadIds: string[]): Promise<Map<string, TokenUsage>>;
  /** Lets a client provide the thread's file system and command runner; returns the detach. */
  attachEnvironment(threadId: string, environment: ToolEnvironment): () => void;

  /**
   * Starts the thread's external agent process before its first turn (kept until stopAgent,
   * deletion or the idle timeout), or finds it running. The built-in engine has none: {}.
   */
  startAgent(threadId: string): Promise<AgentProcessInfo>;
  /** Stops the thread's external agent process, if one runs; its next turn starts a new one. */
  stopAgent(threadId: string): Promise<void>;

  // ---- turns ----
  startTurn(threadId: string, params: StartTurnParams): Promise<Turn>;
  /** Starts a turn, or queues the input behind the running one. */
  enqueue(threadId: string, input: InputPart[]): Promise<Enqueued>;
  removeQueued(threadId: string, queuedInputId: string): Promise<QueuedInput[]>;
  steer(threadId: string, input: InputPart[], expectedTurnId?: string): Promise<Turn>;
  interrupt(threadId: string, turnId?: string): Promise<Turn>;
  /** Runs a slash command on a thread (throws commandNotFound). */
  executeCommand(threadId: string, command: string, args?: string[]): Promise<CommandExecution>;

  // ---- workspaces ----
  /** Skills, custom commands, and the announcements of their changes, per workspace path. */
  readonly workspace: WorkspaceResources;
  /** Scheduled prompts and the workspace heartbeat: turns the server starts by itself. */
  readonly automation: { cron: CronService; heartbeat: HeartbeatService; channels: ChannelRunner };

  // ---- approvals ----
  readonly approvals: {
    /** Registers a client that can answer approvals; returns the unregister. */
    addApprover(approver: Approver): () => void;
    /**
     * A client began following the thread (subscribe, resume, reconnect): the approvals still
     * waiting for an answer there are asked of it too, as they were of the clients present then.
     */
    offerPending(threadId: string): void;
  };

  // ---- face logs ----
  /**
   * Append-only, hash-chained logs a face keeps beside the threads (an AgentCompany run's
   * events), in the server's store: every process of a cluster reads the same. See Store.
   */
  readonly logs: Pick<Store, "appendToLog" | "readLog">;
  /** Records, queues and broadcasts a face shares with every process of the store (the Yeaft relay's). */
  readonly faceState: FaceState;

  // ---- discovery ----
  /** See ListOptions: an answer a client waits on first asks no remote models endpoint ({ askRemote: false }). */
  listModels(options?: ListOptions): Promise<ListedModel[]>;
  modelSelection(threadId: string): Promise<ModelSelection>;
  listBackends(): Promise<BackendAvailability[]>;
  listTools(): ToolSummary[];
  /** The names of listTools' tools, in its order, without working out their parameters' schemas. */
  toolNames(): string[];
}
