// The runtime: owns threads, turns, items, the input queue, approvals and the event stream.
// It knows no wire format; faces call its methods and translate its events.
import fs from "node:fs";
import path from "node:path";
import { newId, newThreadId } from "../ids.js";
import type { Logger } from "../log.js";
import type { AgentProcessInfo, BackendAvailability, BackendSet, TurnContext, TurnOutcome } from "../backends/backend.js";
import type { ListedModel, ListOptions } from "../providers/model-catalog.js";
import type { ThinkingMode } from "../providers/provider.js";
import type { EventCursor, StorageStatus, Store, ThreadCommand, TurnItemsJson, ThreadFilter, ThreadPage } from "../store/store.js";
import type { FaceState } from "../store/face-state.js";
import type { ToolEnvironment, UserQuestion } from "../tools/tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import { Coalesced } from "../coalesced.js";
import { ApprovalBroker } from "./approvals.js";
import { approve, type ApprovalGateDeps, type GatedTurn } from "./approval-gate.js";
import { EventDelivery, type RuntimeListener } from "./delivery.js";
import { forkThread } from "./fork.js";
import { ClusterApprovals, REMOTE_APPROVAL_WINDOW_MS } from "./cluster-approvals.js";
import { recoverUnfinishedTurns } from "./recovery.js";
import { TurnSlots } from "./turn-slots.js";
import { turnEndEvent } from "./turn-end.js";
import { RuntimeError } from "../domain/errors.js";
import type { EventType, NewEvent, RuntimeEvent } from "../domain/events.js";
import type {
  AgentMode,
  BackendSpec,
  ClientMessage,
  HistoryMode,
  InputPart,
  Item,
  ItemType,
  Plan,
  QueuedInput,
  Thread,
  ThreadConfiguration,
  ThreadRuntimeState,
  TokenUsage,
  Turn,
  TurnError,
} from "../domain/model.js";
import { TurnRecorder } from "../domain/turn-recorder.js";
import type { Enqueued, RuntimeApi, ToolSummary } from "./api.js";
import { addUsage } from "../providers/usage.js";
import type { WorkspaceResources } from "../workspace/index.js";
import { executeCommand, type CommandExecution } from "./command-execution.js";
import { CronService } from "../automation/cron.js";
import { HeartbeatService } from "../automation/heartbeat.js";
import { ChannelRunner } from "../automation/channels.js";

export interface RuntimeOptions {
  store: Store;
  backends: BackendSet;
  /** The built-in engine's tools (for discovery methods of the faces). */
  tools: ToolRegistry;
  /** The models the configured providers offer (for model catalogs of the faces). */
  models?: {
    list(options?: ListOptions): Promise<ListedModel[]>;
    /** The provider turns use when neither thread nor turn names one (configured, else detected). */
    defaultProvider?(): Promise<string | undefined>;
  };
  logger: Logger;
  /** The workspaces' skills and custom commands. */
  workspace: WorkspaceResources;
  /** Where cron jobs are kept (in memory when absent). */
  cronFile?: string;
  /** The server's environment (secrets of webhook channels); process.env when absent. */
  env?: NodeJS.ProcessEnv;
  /**
   * The directories whose threads this process runs (a cluster node that reaches only some
   * workspaces): it creates, claims and takes over no other. All when absent.
   */
  workspaceRoots?: string[];
  /** Turns that run at once; more wait (started) until one ends. No limit when absent. */
  maxRunningTurns?: number;
  /** A cluster node's turns taken over when it is lost: continued (default) or failed with ownerLost. */
  failover?: "continue" | "fail";
  defaults: {
    /** The backend of threads that name none. */
    backend: BackendSpec;
    /** The built-in engine's default model. */
    model?: string;
    approvalTimeoutMs: number;
    /** How long running turns wait for the disk to accept writes again before they fail. Default 60 s. */
    storageTimeoutMs?: number;
  };
}

const DEFAULT_STORAGE_TIMEOUT_MS = 60_000;
/** On a shared store, a thread this node has not written for this long (and runs no turn on) is let go. */
const RELEASE_IDLE_MS = 60_000;

export interface StartThreadParams {
  workspacePath: string;
  originChannel: string;
  userId?: string;
  channelContext?: string;
  displayName?: string;
  historyMode?: HistoryMode;
  configuration?: ThreadConfiguration;
  metadata?: Record<string, unknown>;
}

export interface StartTurnParams {
  input: InputPart[];
  /** Required in historyMode "client", refused in "server". */
  messages?: ClientMessage[];
  provider?: string;
  model?: string;
  /** The built-in engine's thinking mode for this turn's model calls. */
  thinking?: ThinkingMode;
}

/** What a turn on a thread would run with when it names no model itself. */
export interface ModelSelection {
  backend: BackendSpec["type"];
  /** The thread's provider, else the server's (configured or detected); undefined when there is none. */
  provider?: string;
  /** The thread's model, else the server's configured one; undefined: the provider's own default. */
  model?: string;
}

interface ActiveTurn {
  turn: Turn;
  abort: AbortController;
  steering: InputPart[][];
  waitingApprovals: number;
  usage?: TokenUsage;
  /** Set when the turn is stopped for a reason of the server's (the disk stayed full): how it ends. */
  failure?: TurnError;
  /** Set when another node took the thread over, or takes it when this one stops: this process records nothing more of the turn. */
  lost?: boolean;
  done: Promise<void>;
}

export type { RuntimeListener } from "./delivery.js";

export class Runtime implements RuntimeApi {
  readonly approvals: ApprovalBroker;
  readonly logs: Pick<Store, "appendToLog" | "readLog">;
  readonly faceState: FaceState;
  readonly workspace: WorkspaceResources;
  readonly automation: { cron: CronService; heartbeat: HeartbeatService; channels: ChannelRunner };
  /** Running turns by thread id (at most one per thread). */
  private readonly active = new Map<string, ActiveTurn>();
  private readonly store: Store;
  private readonly log: Logger;
  /** Tool environments clients attached, by thread id (the latest attached wins). */
  private readonly environments = new Map<string, ToolEnvironment[]>();

  private readonly delivery: EventDelivery;
  private readonly storageListeners = new Set<(status: StorageStatus) => void>();
  private storageTimer: NodeJS.Timeout | undefined;
  /** The seq of the latest event of each thread this process appended or received. */
  private readonly heads = new Map<string, number>();
  /** On a shared store: when this node last wrote each thread it holds (see releaseIdle). */
  private readonly writtenAt = new Map<string, number>();
  private releaseTimer: NodeJS.Timeout | undefined;
  /** The parent of each thread that ran a turn here and works for another (subagents). */
  private readonly parents = new Map<string, string>();
  /** Per thread, the end of the chain of writes that act on what they read (see `serial`). */
  private readonly writing = new Map<string, Promise<unknown>>();
  /**
   * Recovery passes and the taking of offered turns, one at a time: both claim threads whose turn
   * is running, and a pass must not close, as left by a dead process, a turn this node took from
   * the queue but has not yet started running (it is active once taken).
   */
  private adopting: Promise<unknown> = Promise.resolve();
  /** Threads a recovery claimed whose turn it has not yet continued or ended (see `recover`). */
  private readonly takingOver = new Map<string, Promise<void>>();
  private readonly slots: TurnSlots;
  /** Takes turns other nodes offered while a slot is free; asked again during a take, it looks again after. */
  private readonly offers = new Coalesced(() => this.takeOffersWhileFree());

  constructor(private readonly options: RuntimeOptions) {
    this.store = options.store;
    this.log = options.logger;
    this.workspace = options.workspace;
    this.slots = new TurnSlots(options.maxRunningTurns);
    this.logs = {
      appendToLog: (log, records) => this.store.appendToLog(log, records),
      readLog: (log, after) => this.store.readLog(log, after),
    };
    this.faceState = this.store.faceState;
    this.approvals = new ApprovalBroker((threadId) => this.lineage(threadId), this.store.shared ? REMOTE_APPROVAL_WINDOW_MS : undefined);
    const cron = new CronService(this, options.cronFile, this.log);
    this.automation = {
      cron,
      heartbeat: new HeartbeatService(this, cron, this.log),
      channels: new ChannelRunner(this, options.workspace.channels, options.env ?? process.env, this.log),
    };
    this.delivery = new EventDelivery(this.store, this.log);
    if (this.store.shared) {
      this.releaseTimer = setInterval(() => this.releaseIdle(), RELEASE_IDLE_MS);
      this.releaseTimer.unref();
    }
    this.store.onCommit((events) => {
      for (const event of events) if (event.seq > (this.heads.get(event.threadId) ?? 0)) this.heads.set(event.threadId, event.seq);
    });
    this.store.onStorageStatus((status) => this.storageChanged(status));
    // Another node took a thread whose turn ran here: that turn stops, writing nothing more.
    this.store.onLost((threadId) => {
      const active = this.active.get(threadId);
      if (!active) return;
      active.lost = true;
      active.abort.abort();
    });
    // Another node's client changes a thread whose turn runs here (steers, interrupts, queues,
    // renames, …) or answers an approval of that turn; and this node's clients answer approvals
    // of turns that run elsewhere.
    this.store.onCommand(async (threadId, command) => {
      if (command.kind === "approvalSeen") return this.approvals.remoteSeen(command.requestId);
      if (command.kind === "approve") return this.approvals.remoteAnswer(command.requestId, command.decision);
      await this.takingOver.get(threadId);
      switch (command.kind) {
        case "steer":
          return this.steer(threadId, command.input, command.expectedTurnId);
        case "interrupt":
          return this.interrupt(threadId, command.turnId);
        case "enqueue":
          return this.enqueue(threadId, command.input);
        case "removeQueued":
          return this.removeQueued(threadId, command.queuedInputId);
        case "rename":
          return this.renameThread(threadId, command.displayName);
        case "configure":
          return this.configureThread(threadId, command.changes);
        case "setMode":
          return this.setMode(threadId, command.mode);
        case "pause":
          return this.pauseThread(threadId);
        case "unpause":
          return this.unpauseThread(threadId);
        case "archive":
          return this.archiveThread(threadId);
        case "unarchive":
          return this.unarchiveThread(threadId);
        case "delete":
          return this.deleteThread(threadId);
      }
    });
    if (this.store.shared) {
      const cluster = new ClusterApprovals(this.store, this.approvals, (threadId) => this.active.has(threadId), this.log);
      this.delivery.subscribe((event) => cluster.observe(event));
    }
    // Another node offered a turn waiting for a slot: this one may have a slot free.
    this.store.onTurnOffered(() => this.takeOfferedTurns());
    // A node of the cluster is gone: its unfinished turns are taken over here (continued or
    // failed, see `failover`), each by one node.
    this.store.onOrphans(() => {
      this.recover("ownerLost").catch((error: unknown) => this.log.error({ err: error }, "could not take over a lost node's turns"));
    });
  }

  storageStatus(): StorageStatus {
    return this.store.storageStatus();
  }

  onStorageStatus(listener: (status: StorageStatus) => void): () => void {
    this.storageListeners.add(listener);
    return () => this.storageListeners.delete(listener);
  }

  /**
   * The disk refused or accepted writes again. Everyone hears at once (it cannot be an event of
   * the log). Running turns wait, their events held by the store; if the disk stays full past
   * the storage timeout, they are stopped and fail with storageUnavailable, recorded once it can be.
   */
  private storageChanged(status: StorageStatus): void {
    clearTimeout(this.storageTimer);
    this.storageTimer = undefined;
    if (status.available) this.log.info("the data directory can be written again");
    else {
      this.log.error({ cause: status.cause }, status.message);
      this.storageTimer = setTimeout(() => {
        for (const active of this.active.values()) {
          this.log.warn({ threadId: active.turn.threadId, turnId: active.turn.id }, "turn aborted: the data directory stayed unwritable");
          active.failure = { code: "storageUnavailable", message: status.message };
          active.abort.abort();
        }
      }, this.options.defaults.storageTimeoutMs ?? DEFAULT_STORAGE_TIMEOUT_MS);
      this.storageTimer.unref();
    }
    for (const listener of this.storageListeners) {
      try {
        listener(status);
      } catch (error) {
        this.log.error({ err: error }, "storage status listener failed");
      }
    }
  }

  /** Refuses a client's write while the data directory cannot be written. */
  private writable(): void {
    const status = this.store.storageStatus();
    if (!status.available) throw new RuntimeError("storageUnavailable", status.message, { cause: status.cause });
  }

  /** Receives every event once it is committed to the log, in seq order. */
  subscribe(listener: RuntimeListener): () => void {
    return this.delivery.subscribe(listener);
  }

  private emit<T extends EventType>(event: NewEvent<T>): void {
    this.heads.set(event.threadId, this.store.append(event).seq);
    if (this.store.shared) this.writtenAt.set(event.threadId, Date.now());
  }

  /** Lets go of the threads this node wrote last more than RELEASE_IDLE_MS ago and runs nothing on. */
  private releaseIdle(): void {
    const before = Date.now() - RELEASE_IDLE_MS;
    for (const [threadId, at] of this.writtenAt) {
      if (at > before || this.active.has(threadId) || this.writing.has(threadId)) continue;
      this.writtenAt.delete(threadId);
      this.store.release(threadId).catch((error: unknown) => this.log.warn({ err: error, threadId }, "could not release an idle thread"));
    }
  }

  /**
   * Runs a write that acts on what it reads of the thread (its status, its queue) after the
   * thread's earlier such writes: reads wait for the store, and two requests must not both
   * act on the same state. Work under it must not wait for another `serial` of the same thread.
   */
  private serial<T>(threadId: string, work: () => Promise<T>): Promise<T> {
    const run = (this.writing.get(threadId) ?? Promise.resolve()).then(async () => {
      await this.own(threadId);
      return work();
    });
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.writing.set(threadId, settled);
    void settled.then(() => this.writing.get(threadId) === settled && this.writing.delete(threadId));
    return run;
  }

  /**
   * Takes the right to write the thread (on a shared store, it moves here unless another node
   * is running a turn on it).
   */
  private async own(threadId: string): Promise<void> {
    if (!(await this.mayRun(threadId))) {
      throw new RuntimeError(
        "notOwner",
        `This server does not run threads in ${(await this.getThread(threadId)).workspacePath} (outside its --workspace-root); use a node that reaches it.`,
        { threadId },
      );
    }
    if (await this.store.acquire(threadId)) return;
    throw new RuntimeError("notOwner", `Thread ${threadId} is running a turn on another node of the cluster; retry once it ends.`, {
      threadId,
    });
  }

  /**
   * Sends the command to the node that runs the thread's turn, when another node of the cluster
   * does (a thread running a turn cannot move); undefined when none does, and it is done here.
   */
  private onTurnNode(threadId: string, command: ThreadCommand): Promise<{ result: unknown } | undefined> {
    return this.active.has(threadId) ? Promise.resolve(undefined) : this.store.forward(threadId, command);
  }

  /** Whether this process runs threads in the workspace (see RuntimeOptions.workspaceRoots). */
  private reaches(workspacePath: string): boolean {
    const roots = this.options.workspaceRoots;
    return (
      !roots || roots.some((root) => workspacePath === root || workspacePath.startsWith(root.endsWith(path.sep) ? root : root + path.sep))
    );
  }

  /** Whether this process may run the thread (its workspace is under a root it has). */
  private async mayRun(threadId: string): Promise<boolean> {
    return !this.options.workspaceRoots || this.reaches((await this.getThread(threadId)).workspacePath);
  }

  // ---- start-up ------------------------------------------------------------------------

  /**
   * Turns left running by a process that is gone are closed (see recovery.ts): this one's before
   * a restart fail (serverRestarted); another node's are continued here or fail (ownerLost).
   */
  recover(code: "serverRestarted" | "ownerLost" = "serverRestarted"): Promise<number> {
    // One pass at a time: a pass reads the turns the one before it closed as closed.
    let tookOver!: () => void;
    const done = new Promise<void>((resolve) => (tookOver = resolve));
    const claimed: string[] = [];
    return this.oneAtATime(() =>
      recoverUnfinishedTurns(this.store, (event) => this.emit(event), {
        code,
        claim: async (threadId) => {
          if (this.active.has(threadId) || !(await this.mayRun(threadId)) || !(await this.store.acquire(threadId))) return false;
          // Claimed, its turn not yet running here: a steer or interrupt forwarded now waits for it.
          this.takingOver.set(threadId, done);
          claimed.push(threadId);
          return true;
        },
        ...((this.options.failover ?? "continue") === "continue" ? { resume: (turn: Turn) => this.resumeTurn(turn) } : {}),
      }).finally(() => {
        for (const threadId of claimed) if (this.takingOver.get(threadId) === done) this.takingOver.delete(threadId);
        tookOver();
      }),
    );
  }

  /** Runs `work` after the recovery pass or offer taking before it has settled (see `adopting`). */
  private oneAtATime<T>(work: () => Promise<T>): Promise<T> {
    const next = this.adopting.catch(() => undefined).then(work);
    this.adopting = next;
    return next;
  }

  // ---- threads ---------------------------------------------------------------------------

  startThread(params: StartThreadParams): Thread {
    this.writable();
    const workspacePath = path.resolve(params.workspacePath);
    if (!isDirectory(workspacePath)) {
      throw new RuntimeError("invalidInput", `Workspace "${params.workspacePath}" is not an existing directory.`);
    }
    if (!this.reaches(workspacePath)) {
      throw new RuntimeError("invalidInput", `Workspace "${workspacePath}" is outside this server's --workspace-root.`);
    }
    const now = new Date().toISOString();
    const thread: Thread = {
      id: newThreadId(),
      workspacePath,
      originChannel: params.originChannel,
      ...(params.userId !== undefined ? { userId: params.userId } : {}),
      ...(params.channelContext !== undefined ? { channelContext: params.channelContext } : {}),
      ...(params.displayName !== undefined ? { displayName: params.displayName } : {}),
      status: "active",
      createdAt: now,
      lastActiveAt: now,
      historyMode: params.historyMode ?? "server",
      mode: "agent",
      ...(params.configuration ? { configuration: params.configuration } : {}),
      metadata: params.metadata ?? {},
      queuedInputs: [],
    };
    this.emit({ type: "thread.created", threadId: thread.id, data: { thread } });
    return thread;
  }

  /**
   * Starts a new thread with a copy of another's history: every finished turn up to and
   * including `atTurnId` (all of them when absent).
   */
  async forkThread(threadId: string, atTurnId?: string): Promise<Thread> {
    this.writable();
    return this.getThread(await forkThread(this.store, (event) => this.emit(event), await this.getThread(threadId), atTurnId));
  }

  async getThread(threadId: string): Promise<Thread> {
    const thread = await this.store.getThread(threadId);
    if (!thread) throw new RuntimeError("threadNotFound", `Thread not found: ${threadId}`, { threadId });
    return thread;
  }

  findThread(threadId: string): Promise<Thread | undefined> {
    return this.store.getThread(threadId);
  }

  /** A turn with its items; a running turn reflects its live status. */
  async findTurn(turnId: string, opts?: { withItems?: boolean }): Promise<Turn | undefined> {
    const turn = await this.store.getTurn(turnId, opts);
    const active = turn && this.active.get(turn.threadId);
    return turn && active?.turn.id === turnId ? { ...turn, status: active.turn.status } : turn;
  }

  listThreads(filter: ThreadFilter, page: { limit: number; cursor?: string }): Promise<ThreadPage> {
    return this.store.listThreads(filter, page);
  }

  /** The thread's turns, oldest first; the running turn reflects its live status. */
  async turnsOf(threadId: string, withItems = true): Promise<Turn[]> {
    const turns = await this.store.listTurns(threadId, { withItems });
    const active = this.active.get(threadId);
    return active ? turns.map((t) => (t.id === active.turn.id ? { ...t, status: active.turn.status } : t)) : turns;
  }

  /** Every item of the thread as stored JSON, in order (for large reads that pass them through). */
  itemsJsonByTurn(threadId: string, omit?: readonly ItemType[]): Promise<TurnItemsJson[]> {
    return this.store.itemsJsonByTurn(threadId, omit);
  }

  async resumeThread(threadId: string): Promise<Thread> {
    await this.getThread(threadId);
    // Resuming is how a client reads a thread back: it works while the disk is full, unrecorded.
    if (
      this.store.storageStatus().available &&
      !this.active.has(threadId) &&
      (await this.mayRun(threadId)) &&
      (await this.store.acquire(threadId))
    ) {
      this.emit({ type: "thread.resumed", threadId, data: { lastActiveAt: new Date().toISOString() } });
    }
    return this.getThread(threadId);
  }

  async renameThread(threadId: string, displayName: string): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "rename", displayName });
    if (forwarded) return forwarded.result as Thread;
    await this.getThread(threadId);
    await this.own(threadId);
    this.emit({ type: "thread.renamed", threadId, data: { displayName } });
    await this.committedHere(threadId);
    return this.getThread(threadId);
  }

  /** Merges the given settings into the thread's configuration. */
  async configureThread(threadId: string, changes: ThreadConfiguration): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "configure", changes });
    if (forwarded) return forwarded.result as Thread;
    await this.serial(threadId, async () => {
      const thread = await this.getThread(threadId);
      const configuration = { ...thread.configuration, ...changes };
      this.emit({ type: "thread.configured", threadId, data: { configuration } });
    });
    await this.committedHere(threadId);
    return this.getThread(threadId);
  }

  async setMode(threadId: string, mode: AgentMode): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "setMode", mode });
    if (forwarded) return forwarded.result as Thread;
    await this.getThread(threadId);
    await this.own(threadId);
    this.emit({ type: "thread.modeChanged", threadId, data: { mode } });
    await this.committedHere(threadId);
    return this.getThread(threadId);
  }

  /**
   * A paused thread starts no turn: turn/start is refused, queued inputs wait. A turn already
   * running finishes. Pausing a paused thread changes nothing; an archived one must be
   * unarchived first.
   */
  async pauseThread(threadId: string): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "pause" });
    if (forwarded) return forwarded.result as Thread;
    await this.serial(threadId, async () => {
      const thread = await this.getThread(threadId);
      if (thread.status === "archived") throw notActive(thread, "unarchive it first");
      if (thread.status === "active") this.emit({ type: "thread.statusChanged", threadId, data: { status: "paused" } });
    });
    await this.committedHere(threadId);
    return this.getThread(threadId);
  }

  /** Makes a paused thread active again; an idle thread then starts its next queued input. */
  async unpauseThread(threadId: string): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "unpause" });
    if (forwarded) return forwarded.result as Thread;
    await this.serial(threadId, async () => {
      const thread = await this.getThread(threadId);
      if (thread.status === "archived") throw notActive(thread, "unarchive it instead");
      await this.activate(thread);
    });
    await this.committedHere(threadId);
    return this.getThread(threadId);
  }

  /**
   * Hides the thread from thread/list (unless asked for) and stops its work: a running turn is
   * cancelled, queued inputs are kept but wait, and no turn starts until it is unarchived.
   */
  async archiveThread(threadId: string): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "archive" });
    if (forwarded) return forwarded.result as Thread;
    await this.serial(threadId, async () => {
      const thread = await this.getThread(threadId);
      if (thread.status !== "archived") this.emit({ type: "thread.statusChanged", threadId, data: { status: "archived" } });
    });
    await this.committedHere(threadId);
    // Outside `serial`: the turn's end takes it to look at the queue.
    if (this.active.has(threadId)) await this.interrupt(threadId);
    return this.getThread(threadId);
  }

  /** Makes an archived thread active again (paused or not before); an idle thread then starts its next queued input. */
  async unarchiveThread(threadId: string): Promise<Thread> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "unarchive" });
    if (forwarded) return forwarded.result as Thread;
    await this.serial(threadId, async () => {
      const thread = await this.getThread(threadId);
      if (thread.status === "paused") throw notActive(thread, "unpause it instead");
      await this.activate(thread);
    });
    await this.committedHere(threadId);
    return this.getThread(threadId);
  }

  /** Under `serial`. */
  private async activate(thread: Thread): Promise<void> {
    if (thread.status === "active") return;
    this.emit({ type: "thread.statusChanged", threadId: thread.id, data: { status: "active" } });
    await this.startNextQueued(thread.id);
  }

  async deleteThread(threadId: string): Promise<void> {
    this.writable();
    if (await this.onTurnNode(threadId, { kind: "delete" })) return;
    await this.getThread(threadId);
    if (this.active.has(threadId)) {
      await this.interrupt(threadId);
      // Its clients are told the turn ended before the thread (and the turn) are gone.
      await this.delivery.delivered();
    }
    await this.options.backends.release(threadId);
    await this.own(threadId);
    this.emit({ type: "thread.deleted", threadId, data: {} });
    await this.committedHere(threadId);
    this.approvals.forgetThread(threadId);
  }

  /** The models the configured providers offer, the default one marked. */
  listModels(options?: ListOptions): Promise<ListedModel[]> {
    return this.options.models?.list(options) ?? Promise.resolve([]);
  }

  /** The backend, provider and model a turn on this thread gets when it names no model. */
  async modelSelection(threadId: string): Promise<ModelSelection> {
    const thread = await this.getThread(threadId);
    const backend = this.backendSpecOf(thread).type;
    if (backend !== "builtin") return { backend, ...(thread.configuration?.model ? { model: thread.configuration.model } : {}) };
    const workspace = this.workspace.defaults.read(thread.workspacePath);
    const provider = thread.configuration?.provider ?? workspace.provider ?? (await this.options.models?.defaultProvider?.());
    const model = thread.configuration?.model ?? workspace.model ?? this.options.defaults.model;
    return { backend, ...(provider ? { provider } : {}), ...(model ? { model } : {}) };
  }

  /** Token usage summed over each thread's turns (threads without any are left out). */
  async threadUsage(threadIds: string[]): Promise<Map<string, TokenUsage>> {
    const totals = new Map<string, TokenUsage>();
    for (const { threadId, usage } of await this.store.turnUsages(threadIds)) totals.set(threadId, addUsage(totals.get(threadId), usage));
    return totals;
  }

  /** Each backend's availability here (binary found, version, features). */
  listBackends(): Promise<BackendAvailability[]> {
    return this.options.backends.availability();
  }

  /** The tools the agent can use, for discovery methods of the faces. */
  listTools(): ToolSummary[] {
    const tools = this.options.tools;
    const specs = new Map(tools.specs().map((spec) => [spec.name, spec.parameters]));
    return tools
      .list()
      .map(({ name, description, kind }) => ({ name, description, kind, parameters: specs.get(name) ?? { type: "object" } }));
  }

  toolNames(): string[] {
    return this.options.tools.list().map((tool) => tool.name);
  }

  runtimeState(threadId: string): ThreadRuntimeState {
    const active = this.active.get(threadId);
    return { running: active !== undefined, waitingOnApproval: (active?.waitingApprovals ?? 0) > 0 };
  }

  async latestPlan(threadId: string): Promise<Plan | undefined> {
    return (await this.getThread(threadId)).plan;
  }

  /**
   * The seq of the thread's latest event this process appended or was delivered: "now", for
   * following from now on. 0 for a thread it has not seen an event of since it started: every
   * event it will deliver comes later.
   */
  lastSeq(threadId: string): number {
    return this.heads.get(threadId) ?? 0;
  }

  follow(threadId: string): () => void {
    return this.store.follow(threadId);
  }

  /**
   * The thread's events after `afterSeq`, for a client catching up. The log is never pruned,
   * so every gap can be replayed, except one this log cannot know: a seq beyond its end means
   * the client followed another history (a replaced or restored data directory).
   */
  async eventsAfter(threadId: string, afterSeq: number, limit?: number): Promise<RuntimeEvent[]> {
    const last = await this.store.lastSeq(threadId);
    if (afterSeq > last) {
      throw new RuntimeError(
        "replayGap",
        `Cannot replay after seq ${afterSeq}: this server's log of the thread ends at seq ${last}, so the history you followed is not this one. Read the whole thread again.`,
        { threadId, afterSeq, lastSeq: last },
      );
    }
    return this.store.eventsAfter(threadId, afterSeq, limit);
  }

  eventsAfterEach(cursors: readonly EventCursor[], limitEach: number): Promise<Map<string, RuntimeEvent[]>> {
    return this.store.eventsAfterEach(cursors, limitEach);
  }

  /**
   * Lets a client provide the thread's file system and command runner (e.g. an editor with
   * unsaved buffers): the built-in tools use it instead of the disk and a local shell while it
   * is attached. The latest attachment wins; the returned function detaches this one.
   */
  attachEnvironment(threadId: string, environment: ToolEnvironment): () => void {
    const stack = this.environments.get(threadId) ?? [];
    stack.push(environment);
    this.environments.set(threadId, stack);
    return () => {
      const remaining = (this.environments.get(threadId) ?? []).filter((e) => e !== environment);
      if (remaining.length > 0) this.environments.set(threadId, remaining);
      else this.environments.delete(threadId);
    };
  }

  async startAgent(threadId: string): Promise<AgentProcessInfo> {
    const thread = await this.getThread(threadId);
    const spec = this.backendSpecOf(thread);
    const backend = await this.options.backends.backendFor(spec);
    return backend.warm ? backend.warm(thread, spec) : {};
  }

  async stopAgent(threadId: string): Promise<void> {
    await this.getThread(threadId);
    await this.options.backends.release(threadId);
  }

  // ---- turns -----------------------------------------------------------------------------

  async startTurn(threadId: string, params: StartTurnParams): Promise<Turn> {
    this.writable();
    const turn = await this.serial(threadId, async () => this.startTurnOn(await this.getThread(threadId), params));
    await this.committedHere(threadId);
    return turn;
  }

  /**
   * On a shared store, a change is answered once it is committed. This node learns that another
   * node claimed one of its idle threads (a resume, a rename there) only at its next read of the
   * feed; what it wrote meanwhile is refused at its commit (fenced), a turn started then stops,
   * and the client is told to try again, not told of a change or a turn that never was. The wait
   * is for the commit already scheduled: the database gone, the events wait and this does not.
   */
  private async committedHere(threadId: string): Promise<void> {
    const seq = this.heads.get(threadId);
    if (!this.store.shared || seq === undefined || (await this.store.committed(threadId, seq))) return;
    throw new RuntimeError("notOwner", `Another node of the cluster took thread ${threadId} as this server wrote to it; try again.`, {
      threadId,
    });
  }

  /** Under `serial`. */
  private startTurnOn(thread: Thread, params: StartTurnParams): Turn {
    const threadId = thread.id;
    if (thread.status !== "active")
      throw notActive(thread, thread.status === "paused" ? "unpause it, or queue the input with turn/enqueue" : "unarchive it first");
    const running = this.active.get(threadId);
    if (running) {
      throw new RuntimeError(
        "turnInProgress",
        `A turn is already running on thread ${threadId}: queue the input, steer the running turn, or interrupt it.`,
        { threadId, turnId: running.turn.id },
      );
    }
    if (thread.historyMode === "client" && !params.messages) {
      throw new RuntimeError(
        "invalidInput",
        'This thread keeps its history on the client (historyMode "client"): every turn must carry the conversation\'s messages.',
      );
    }
    if (thread.historyMode === "server" && params.messages) {
      throw new RuntimeError(
        "invalidInput",
        'This thread keeps its history on the server (historyMode "server"): a turn must not carry messages.',
      );
    }
    if (params.input.length === 0) throw new RuntimeError("invalidInput", "input must contain at least one item.");
    return this.launch(thread, params);
  }

  /** Queues input behind the running turn, or starts it now when the thread is idle. */
  async enqueue(threadId: string, input: InputPart[]): Promise<Enqueued> {
    this.writable();
    // While another node runs the thread's turn, the input joins the queue there.
    const forwarded = await this.onTurnNode(threadId, { kind: "enqueue", input });
    if (forwarded) return forwarded.result as Enqueued;
    const enqueued = await this.serial(threadId, async () => this.enqueueOn(await this.getThread(threadId), input));
    await this.committedHere(threadId);
    return enqueued;
  }

  /** Under `serial`. */
  private async enqueueOn(thread: Thread, input: InputPart[]): Promise<Enqueued> {
    const threadId = thread.id;
    if (thread.historyMode === "client") {
      throw new RuntimeError(
        "invalidInput",
        "This thread keeps its history on the client: inputs cannot be queued, since every turn must carry the conversation's messages.",
      );
    }
    if (thread.status === "archived") throw notActive(thread, "unarchive it first");
    // A paused thread keeps inputs queued until it is unpaused.
    const runnable = thread.status === "active";
    if (runnable && !this.active.has(threadId) && thread.queuedInputs.length === 0) {
      return { turn: this.startTurnOn(thread, { input }), queuedInputs: [] };
    }
    const queuedInput: QueuedInput = { id: newId("queued"), input, createdAt: new Date().toISOString() };
    const queuedInputs = [...thread.queuedInputs, queuedInput];
    this.emit({ type: "thread.queueUpdated", threadId, data: { queuedInputs } });
    if (this.active.has(threadId) || !runnable) return { queuedInput, queuedInputs };
    // Idle, with inputs left by a turn that failed or was cancelled: they go first (FIFO).
    const turn = await this.startNextQueued(threadId);
    return { ...(turn ? { turn } : {}), queuedInput, queuedInputs: queuedInputs.slice(1) };
  }

  async removeQueued(threadId: string, queuedInputId: string): Promise<QueuedInput[]> {
    this.writable();
    const forwarded = await this.onTurnNode(threadId, { kind: "removeQueued", queuedInputId });
    if (forwarded) return forwarded.result as QueuedInput[];
    const queuedInputs = await this.serial(threadId, async () => {
      const thread = await this.getThread(threadId);
      const queuedInputs = thread.queuedInputs.filter((q) => q.id !== queuedInputId);
      if (queuedInputs.length === thread.queuedInputs.length) {
        throw new RuntimeError("invalidInput", `No queued input ${queuedInputId} on thread ${threadId}.`);
      }
      this.emit({ type: "thread.queueUpdated", threadId, data: { queuedInputs } });
      return queuedInputs;
    });
    await this.committedHere(threadId);
    return queuedInputs;
  }

  /** Adds input to the running turn; the model sees it at the next step. */
  async steer(threadId: string, input: InputPart[], expectedTurnId?: string): Promise<Turn> {
    await this.getThread(threadId);
    const forwarded = await this.onTurnNode(threadId, { kind: "steer", input, ...(expectedTurnId ? { expectedTurnId } : {}) });
    if (forwarded) return forwarded.result as Turn;
    const active = this.active.get(threadId);
    if (!active) throw new RuntimeError("turnNotRunning", `No turn is running on thread ${threadId}.`, { threadId });
    if (expectedTurnId && expectedTurnId !== active.turn.id) {
      throw new RuntimeError("turnNotRunning", `Turn ${expectedTurnId} is not the running turn (${active.turn.id}).`, {
        threadId,
        turnId: expectedTurnId,
      });
    }
    active.steering.push(input);
    return active.turn;
  }

  /** The thread and those it works for, through metadata.parentThreadId (subagents). */
  private lineage(threadId: string): string[] {
    const threads = [threadId];
    // Approvals come from running turns, and a subagent's parent runs while it does: both ran here.
    for (let parent = this.parents.get(threadId); parent && threads.length < 8; parent = this.parents.get(parent)) {
      if (threads.includes(parent)) break;
      threads.push(parent);
    }
    return threads;
  }

  /** Runs a slash command on a thread: a built-in one, or a custom one as the thread's next input. */
  executeCommand(threadId: string, command: string, args?: string[]): Promise<CommandExecution> {
    return executeCommand(this, this.workspace.commands, threadId, command, args);
  }

  /** Cancels the running turn and resolves once it has ended. */
  async interrupt(threadId: string, turnId?: string): Promise<Turn> {
    await this.getThread(threadId);
    const forwarded = await this.onTurnNode(threadId, { kind: "interrupt", ...(turnId ? { turnId } : {}) });
    if (forwarded) return forwarded.result as Turn;
    const active = this.active.get(threadId);
    if (turnId && active?.turn.id !== turnId) {
      if (!(await this.store.getTurn(turnId))) throw new RuntimeError("turnNotFound", `Turn not found: ${turnId}`, { turnId });
      throw new RuntimeError("turnNotRunning", `Turn ${turnId} is not running.`, { threadId, turnId });
    }
    if (!active) throw new RuntimeError("turnNotRunning", `No turn is running on thread ${threadId}.`, { threadId });
    active.abort.abort();
    await active.done;
    return (await this.store.getTurn(active.turn.id)) ?? active.turn;
  }

  hasRunningTurns(): boolean {
    return this.active.size > 0;
  }

  /** How many turns run now. */
  runningTurns(): number {
    return this.active.size;
  }

  /** Resolves when no turn is running. */
  async idle(): Promise<void> {
    while (this.active.size > 0) await Promise.all([...this.active.values()].map((a) => a.done));
  }

  /** Cancels every running turn (graceful shutdown) and flushes the store. */
  async shutdown(): Promise<void> {
    clearTimeout(this.storageTimer);
    clearInterval(this.releaseTimer);
    this.automation.cron.close();
    this.automation.heartbeat.close();
    await this.automation.channels.close();
    await this.handOverTurns();
    for (const active of this.active.values()) active.abort.abort();
    await this.idle();
    await Promise.all([this.options.backends.close(), this.workspace.mcp.close()]);
    await this.store.flush();
  }

  /**
   * A cluster node that stops (failover: continue) hands the turns it runs to the nodes that
   * stay, rather than cancelling them: they stop here writing nothing more, what they recorded
   * is committed (flush), and once this node has left another takes them over and continues
   * them, as after a crash, but at once and with nothing streamed lost. A turn no other node can
   * continue (an external agent's, a client-history thread's), or with no other node alive, is
   * cancelled, as on one server.
   */
  private async handOverTurns(): Promise<void> {
    if ((this.options.failover ?? "continue") !== "continue" || this.active.size === 0) return;
    if (!(await this.store.peersAlive().catch(() => false))) return;
    const movable: ActiveTurn[] = [];
    for (const active of this.active.values()) {
      const thread = await this.getThread(active.turn.threadId).catch(() => undefined);
      if (thread && this.runsFromTheLog(thread)) movable.push(active);
    }
    // In one go: no append of theirs may land between the store letting go and the abort.
    this.store.handOver(movable.map((active) => active.turn.threadId));
    for (const active of movable) {
      active.lost = true;
      active.abort.abort();
    }
    if (movable.length > 0) this.log.info({ turns: movable.length }, "handing running turns over to the cluster's other nodes");
  }

  private launch(thread: Thread, params: StartTurnParams): Turn {
    // Switchyard's default model is the built-in engine's; an external agent has its own.
    const builtin = this.backendSpecOf(thread).type === "builtin";
    const model = params.model ?? thread.configuration?.model ?? (builtin ? this.options.defaults.model : undefined);
    const turn: Turn = {
      id: newId("turn"),
      threadId: thread.id,
      status: "running",
      startedAt: new Date().toISOString(),
      input: params.input,
      ...(model ? { model } : {}),
    };
    this.emit({ type: "turn.started", threadId: thread.id, data: { turn: { ...turn, items: [] } } });
    this.run(thread, turn, params, { startSeq: this.heads.get(thread.id) });
    return { ...turn, items: [] };
  }

  /**
   * Takes over a turn another node was running when it was lost (failover: continue): the
   * built-in engine asks the model again from what the turn recorded. Other backends keep their
   * conversation in their own process, which is gone: false, the turn fails.
   */
  private async resumeTurn(turn: Turn): Promise<boolean> {
    const thread = await this.getThread(turn.threadId);
    if (!this.runsFromTheLog(thread) || this.active.has(thread.id)) return false;
    this.log.info({ threadId: thread.id, turnId: turn.id }, "continuing a turn whose node was lost");
    this.run(thread, { ...turn, status: "running" }, { input: turn.input, ...(turn.model ? { model: turn.model } : {}) }, { resume: true });
    return true;
  }

  /**
   * Whether any node can run the thread's turn from what the log recorded: the built-in engine
   * with the history kept by the server. An external agent keeps its conversation in its own
   * process; a client-history thread's conversation comes with each turn/start.
   */
  private runsFromTheLog(thread: Thread): boolean {
    return this.backendSpecOf(thread).type === "builtin" && thread.historyMode !== "client";
  }

  /**
   * Waits for a slot to run the turn here (--max-running-turns). In a cluster, a turn that has
   * to wait is also offered to the other nodes (when another node can run it: the built-in
   * engine, with the history kept here); whichever has a slot first runs it. "moved": another
   * node took it, and its thread.
   */
  private async slotFor(thread: Thread, active: ActiveTurn, params: StartTurnParams): Promise<"run" | "cancelled" | "moved"> {
    if (this.slots.tryTake()) return "run";
    const movable = this.store.shared && this.runsFromTheLog(thread) && !params.messages;
    const { input, model, provider, thinking } = params;
    // Offered once the turn's start is committed: a node that takes it finds the turn running.
    const offered =
      movable &&
      (await this.store
        .flush()
        .then(() =>
          this.store.offerTurn({
            threadId: thread.id,
            turnId: active.turn.id,
            workspacePath: thread.workspacePath,
            params: { input, ...(model ? { model } : {}), ...(provider ? { provider } : {}), ...(thinking ? { thinking } : {}) },
          }),
        )
        .then(
          () => true,
          (error: unknown) => {
            this.log.warn({ err: error, turnId: active.turn.id }, "could not offer a waiting turn to the cluster; it waits here");
            return false;
          },
        ));
    const granted = await this.slots.take(active.abort.signal);
    if (offered && !(await this.store.withdrawTurn(active.turn.id))) {
      if (granted) this.slots.release();
      active.lost = true;
      return "moved";
    }
    return granted ? "run" : "cancelled";
  }

  /** While this node has a slot free, runs turns that other nodes offered (see `slotFor`). */
  private takeOfferedTurns(): void {
    if (!this.store.shared) return;
    this.offers.run().catch((error: unknown) => this.log.warn({ err: error }, "could not take a turn another node offered"));
  }

  private async takeOffersWhileFree(): Promise<void> {
    while (this.slots.tryTake()) {
      const running = await this.oneAtATime(async () => {
        const taken = await this.takeOfferedTurn();
        if (!taken) return false;
        this.log.info({ threadId: taken.thread.id, turnId: taken.turn.id }, "running a turn another node offered");
        this.run(taken.thread, taken.turn, taken.params, { slotHeld: true });
        return true;
      }).catch((error: unknown) => {
        this.slots.release();
        throw error;
      });
      if (!running) return this.slots.release();
    }
  }

  private async takeOfferedTurn(): Promise<{ thread: Thread; turn: Turn; params: StartTurnParams } | undefined> {
    const offered = await this.store.takeOfferedTurn((workspacePath) => this.reaches(workspacePath));
    if (!offered) return undefined;
    const [thread, turn] = await Promise.all([this.store.getThread(offered.threadId), this.store.getTurn(offered.turnId)]);
    if (thread && turn?.status === "running" && !this.active.has(thread.id)) return { thread, turn, params: offered.params };
    // Taken, with its thread, but not to be run here after all: it ends rather than hang.
    if (turn?.status === "running") {
      const error = { code: "internal" as const, message: "The node that took this waiting turn over could not run it." };
      this.emit(turnEndEvent(offered.threadId, offered.turnId, { status: "failed", error }, new Date().toISOString()));
    }
    return undefined;
  }

  /**
   * Runs a turn that has started until it ends: `resume`, one taken over from a lost node;
   * `slotHeld`, one this node already has a slot for.
   */
  private run(
    thread: Thread,
    turn: Turn,
    params: StartTurnParams,
    how: { resume?: boolean; slotHeld?: boolean; startSeq?: number | undefined } = {},
  ): void {
    const active: ActiveTurn = { turn, abort: new AbortController(), steering: [], waitingApprovals: 0, done: Promise.resolve() };
    this.active.set(thread.id, active);
    const parent = thread.metadata.parentThreadId;
    if (typeof parent === "string") this.parents.set(thread.id, parent);
    this.emitRuntimeChanged(thread.id);
    // The turn runs from the next tick, after the caller has its answer. Whatever happens, the
    // turn ends and leaves the thread idle: a failure here must not stay unhandled.
    active.done = new Promise<void>((resolve) => setImmediate(resolve))
      .then(async (): Promise<TurnOutcome> => {
        const slot = how.slotHeld ? "run" : await this.slotFor(thread, active, params);
        if (slot === "moved") return { status: "cancelled", reason: "moved to another node" }; // recorded there, not here
        if (slot === "cancelled") return { status: "cancelled", reason: "interrupted" };
        try {
          return await this.execute(thread, active, params, how);
        } finally {
          this.slots.release();
          this.takeOfferedTurns();
        }
      })
      // A known error keeps its code: a client retries a storageUnavailable turn, not an internal one.
      .catch((error: unknown): TurnOutcome => ({
        status: "failed",
        error: error instanceof RuntimeError ? { code: error.code, message: error.message } : { code: "internal", message: String(error) },
      }))
      .then((outcome) => this.finish(thread.id, active, outcome))
      .catch((error: unknown) => {
        this.log.error({ err: error, threadId: thread.id, turnId: turn.id }, "could not record the end of a turn");
        this.active.delete(thread.id);
      });
  }

  private backendSpecOf(thread: Thread): BackendSpec {
    return thread.configuration?.backend ?? this.options.defaults.backend;
  }

  private async execute(
    thread: Thread,
    active: ActiveTurn,
    params: StartTurnParams,
    { resume = false, startSeq }: { resume?: boolean; startSeq?: number | undefined },
  ): Promise<TurnOutcome> {
    const recorder = new TurnRecorder((event) => this.emit(event), thread.id, active.turn.id);
    // On a shared store nothing of a turn this node started leaves it (a model request, an
    // agent's work) before the database confirms the thread is still this node's: a node that
    // has not yet seen another take the thread would run a turn refused at its commit, the
    // model's answer billed and thrown away. One read (waiting for the start's commit instead
    // cost a first delta 10.8 → 19.4 ms on one node), which the built-in engine makes beside its
    // history read (`history()` waits for both); a turn that reads none waits first. Not this
    // node's (or no answer: the database gone), the start's commit decides: refused, the thread
    // is lost and the turn's signal aborted; waiting for the database, the turn goes on.
    const started =
      this.store.shared && startSeq !== undefined
        ? this.store
            .stillOwns(thread.id)
            .catch(() => false)
            .then((owns) => owns || this.store.committed(thread.id, startSeq))
        : undefined;
    const backendSpec = this.backendSpecOf(thread);
    const readsHistory = backendSpec.type === "builtin" && !params.messages;
    if (started && !readsHistory && !(await started)) return { status: "cancelled", reason: "ownerLost" };
    const backend = await this.options.backends.backendFor(backendSpec);
    const ctx: TurnContext = {
      thread,
      backendSpec,
      turnId: active.turn.id,
      input: params.input,
      ...(params.messages ? { messages: params.messages } : {}),
      ...(params.provider ? { provider: params.provider } : {}),
      ...(active.turn.model ? { model: active.turn.model } : {}),
      ...(params.thinking ? { thinking: params.thinking } : {}),
      recorder,
      signal: active.abort.signal,
      log: this.log.child({ threadId: thread.id, turnId: active.turn.id, backend: backend.type }),
      // A resumed turn's history includes what it recorded before its node was lost.
      history: async () => (await Promise.all([this.priorItems(thread.id, resume ? undefined : active.turn.id, startSeq), started]))[0],
      ...(resume ? { resume } : {}),
      environment: () => this.environments.get(thread.id)?.at(-1),
      approve: (ask, callId) => approve(this.gateDeps, thread, this.gatedTurn(thread.id, active, recorder), ask, callId),
      ...(this.approvals.canQuestion(thread.id)
        ? { ask: (question: UserQuestion) => this.approvals.question(thread.id, question, active.abort.signal) }
        : {}),
      callClientTool: (call) => this.approvals.callTool({ ...call, threadId: thread.id, turnId: active.turn.id }, active.abort.signal),
      takeSteering: () => active.steering.splice(0),
      reportUsage: (usage) => this.addUsage(thread.id, active, usage),
      reportPlan: (plan) => {
        const full: Plan = { ...plan, updatedAt: new Date().toISOString(), turnId: active.turn.id };
        this.emit({ type: "turn.planUpdated", threadId: thread.id, data: { turnId: active.turn.id, plan: full } });
      },
      reportDiff: (diff) => this.emit({ type: "turn.diffUpdated", threadId: thread.id, data: { turnId: active.turn.id, diff } }),
      ...(thread.backendSession ? { session: thread.backendSession } : {}),
      recordSession: (session) => this.emit({ type: "thread.backendSession", threadId: thread.id, data: { session } }),
    };
    return backend.runTurn(ctx);
  }

  /** `startSeq`: the seq of the turn's start, when this node started it (what came before is its history). */
  private async priorItems(threadId: string, currentTurnId: string | undefined, startSeq?: number): Promise<Item[]> {
    const turns = await this.store.listTurns(threadId, {
      withItems: true,
      ...(startSeq === undefined ? {} : { committedBefore: startSeq }),
    });
    return turns.filter((t) => t.id !== currentTurnId).flatMap((t) => t.items ?? []);
  }

  private async finish(threadId: string, active: ActiveTurn, result: TurnOutcome): Promise<void> {
    const outcome: TurnOutcome = active.failure ? { status: "failed", error: active.failure } : result;
    if (active.lost) {
      this.log.warn({ threadId, turnId: active.turn.id }, "turn stopped here: another node of the cluster takes the thread over");
      this.active.delete(threadId);
      this.parents.delete(threadId);
      return;
    }
    this.emit(turnEndEvent(threadId, active.turn.id, outcome, new Date().toISOString(), active.usage));
    this.active.delete(threadId);
    this.parents.delete(threadId);
    this.emitRuntimeChanged(threadId);
    if (outcome.status === "completed") await this.serial(threadId, () => this.startNextQueued(threadId));
  }

  /** Under `serial`. */
  private async startNextQueued(threadId: string): Promise<Turn | undefined> {
    const thread = await this.store.getThread(threadId);
    const [next, ...rest] = thread?.queuedInputs ?? [];
    if (!thread || !next || thread.status !== "active" || this.active.has(threadId)) return undefined;
    this.emit({ type: "thread.queueUpdated", threadId, data: { queuedInputs: rest } });
    return this.launch({ ...thread, queuedInputs: rest }, { input: next.input });
  }

  /** Adds one model call's usage to the turn's total. */
  private addUsage(threadId: string, active: ActiveTurn, delta: TokenUsage): void {
    active.usage = addUsage(active.usage, delta);
    this.emit({ type: "usage.updated", threadId, data: { turnId: active.turn.id, usage: active.usage, delta } });
  }

  private emitRuntimeChanged(threadId: string): void {
    this.emit({ type: "thread.runtimeChanged", threadId, data: { runtime: this.runtimeState(threadId) } });
  }

  private get gateDeps(): ApprovalGateDeps {
    return {
      store: this.store,
      broker: this.approvals,
      emit: (event) => this.emit(event),
      delivered: () => this.delivery.delivered(),
      defaultTimeoutMs: this.options.defaults.approvalTimeoutMs,
      workspacePolicy: (workspacePath) => this.workspace.defaults.read(workspacePath).defaultApprovalPolicy,
    };
  }

  /** The running turn as the approval gate sees it: waiting on a question shows in its status. */
  private gatedTurn(threadId: string, active: ActiveTurn, recorder: TurnRecorder): GatedTurn {
    return {
      turnId: active.turn.id,
      signal: active.abort.signal,
      recorder,
      waiting: (change) => {
        active.waitingApprovals += change;
        active.turn.status = active.waitingApprovals > 0 ? "waitingApproval" : "running";
        this.emitRuntimeChanged(threadId);
      },
    };
  }
}

function notActive(thread: Thread, hint: string): RuntimeError {
  return new RuntimeError("threadNotActive", `Thread ${thread.id} is ${thread.status}: ${hint}.`, {
    threadId: thread.id,
    status: thread.status,
  });
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
