// SwitchyardClient: a typed AppServer client over stdio or WebSocket, on the same JSON-RPC
// engine as the server. It keeps one connection alive (reconnecting with backoff), and keeps
// each followed thread's event stream whole across reconnections: it re-subscribes with
// afterSeq = the last seq it delivered, and drops replayed events it already delivered.
import { AppServerErrorCode } from "../faces/appserver/errors.js";
import { silentLogger, type Logger } from "../log.js";
import { ConnectionClosedError, RequestTimeoutError, RpcConnection } from "../rpc/connection.js";
import { ErrorCode, RpcError } from "../rpc/errors.js";
import { VERSION } from "../version.js";
import { EventStream } from "./event-stream.js";
import { openLink, type Link } from "./links.js";
import type {
  AppServerRequestMethod,
  ApprovalHandler,
  ApprovalRequest,
  ClientCapabilities,
  ClientEvent,
  ClientEventMap,
  ClientEventName,
  ClientOptions,
  ConnectTarget,
  ConnectionState,
  RequestParams,
  RequestResult,
  ServerInfo,
  ServerNotification,
  TurnEnd,
} from "./types.js";

const DEFAULT_TIMEOUT_MS = 60_000;
/** How often a WebSocket client pings its server (ClientOptions.heartbeatMs). */
const DEFAULT_HEARTBEAT_MS = 15_000;
const RECONNECT_DEFAULTS = { initialDelayMs: 250, maxDelayMs: 5_000, maxAttempts: 10 };
const TURN_END_METHODS = new Set<string>(["turn/completed", "turn/failed", "turn/cancelled"]);
/** How many finished turns `turnEnd()` remembers, so waiting on a turn that already ended works. */
const REMEMBERED_TURN_ENDS = 1_000;

export interface RequestOptions {
  timeoutMs?: number;
}

type Listener<K extends ClientEventName> = (params: ClientEventMap[K]) => void;
type Input = RequestParams<"turn/start">["input"];

/**
 * Exponential backoff with "equal jitter": half the step is fixed, half random, so clients
 * that lost the same server spread out but still back off.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const step = Math.min(maxMs, initialMs * 2 ** (attempt - 1));
  return step / 2 + (random() * step) / 2;
}

/** Adds to a map that keeps the last REMEMBERED_TURN_ENDS entries. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.set(key, value);
  if (map.size > REMEMBERED_TURN_ENDS) map.delete(map.keys().next().value!);
}

/** A timer, or none for 0 / Infinity ("no timeout", as in RpcConnection; setTimeout would fire at once). */
function timeout(ms: number, fire: () => void): NodeJS.Timeout | undefined {
  return Number.isFinite(ms) && ms > 0 ? setTimeout(fire, ms) : undefined;
}

/** Every ClientOptions key (a Record, so a new option cannot be left out). */
const CLIENT_OPTION_KEYS: Record<keyof ClientOptions, true> = {
  clientInfo: true,
  capabilities: true,
  onApproval: true,
  requestTimeoutMs: true,
  reconnect: true,
  heartbeatMs: true,
  logger: true,
};

export class SwitchyardClient {
  private stateValue: ConnectionState = "connecting";
  private link: Link | undefined;
  private conn: RpcConnection | undefined;
  /** A link being set up (reconnecting), so close() can tear it down too. */
  private opening: Link | undefined;
  /** Which of a cluster's URLs the next connection tries first: after a lost node, the next one. */
  private firstUrl = 0;
  private info: ServerInfo | undefined;
  private approvalHandler: ApprovalHandler | undefined;
  private readonly log: Logger;
  private readonly timeoutMs: number;
  private readonly reconnect: Required<NonNullable<Exclude<ClientOptions["reconnect"], false>>> | undefined;

  /** Threads to re-subscribe after a reconnection, with the seq they were followed from. */
  private readonly followed = new Map<string, number>();
  /** Per thread, the seq of the last event delivered: the dedup line and the resume point. */
  private readonly lastSeq = new Map<string, number>();
  /** The highest seq seen on any thread: a safe resume point for threads followed "from now". */
  private highWater = 0;
  private readonly turnEnds = new Map<string, TurnEnd>();
  /** The thread of each turn seen to start and not yet to end, and the threads seen deleted: see `turnEnd`. */
  private readonly turnThreads = new Map<string, string>();
  private readonly deletedThreads = new Map<string, true>();

  private readonly listeners = new Map<ClientEventName, Set<(params: never) => void>>();
  private readonly streams = new Set<{ threadId: string | undefined; stream: EventStream<ClientEvent> }>();
  private readonly anyListeners = new Set<(event: ClientEvent) => void>();
  private readyWaiters = new Set<{ resolve: (conn: RpcConnection) => void; reject: (error: Error) => void }>();
  private wakeBackoff: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly target: ConnectTarget,
    private readonly options: ClientOptions,
  ) {
    this.log = (options.logger ?? silentLogger).child({ component: "client" });
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.reconnect = options.reconnect === false ? undefined : { ...RECONNECT_DEFAULTS, ...options.reconnect };
    this.approvalHandler = options.onApproval;
  }

  /** Connects, initializes, and resolves once the client is ready; rejects if the first connection fails. */
  static async connect(target: ConnectTarget, options: ClientOptions = {}): Promise<SwitchyardClient> {
    // From JavaScript an option put in the target would be ignored without a word (an approval
    // handler never installed: the thread's policy answers instead).
    const misplaced = Object.keys(target).filter((key) => Object.hasOwn(CLIENT_OPTION_KEYS, key));
    if (misplaced.length > 0)
      throw new TypeError(`SwitchyardClient.connect: options go in the second argument, not the target: ${misplaced.join(", ")}`);
    const client = new SwitchyardClient(target, options);
    try {
      client.install(await client.openSession());
    } catch (error) {
      await client.shutdown(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    return client;
  }

  get state(): ConnectionState {
    return this.stateValue;
  }

  /** What the server said at the latest initialize. */
  get serverInfo(): ServerInfo {
    if (!this.info) throw new ConnectionClosedError("Not connected yet");
    return this.info;
  }

  // ---- requests ----------------------------------------------------------------------------

  /**
   * Sends a request and resolves with its result. While reconnecting it waits for the new
   * connection (within the timeout). A request in flight when the connection drops rejects
   * with ConnectionClosedError and is not retried: it may or may not have taken effect.
   * Server errors reject with RpcError (code, message, data).
   */
  async request<M extends AppServerRequestMethod>(
    method: M,
    params: RequestParams<M>,
    opts: RequestOptions = {},
  ): Promise<RequestResult<M>> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    const conn = await this.connected(method, timeoutMs);
    // At least 1 ms: RpcConnection reads 0 as "no timeout".
    const remaining = Number.isFinite(timeoutMs) && timeoutMs > 0 ? Math.max(1, deadline - Date.now()) : timeoutMs;
    const result = await conn.request<RequestResult<M>>(method, params, { timeoutMs: remaining });
    this.track(method, params, result);
    return result;
  }

  startThread(params: RequestParams<"thread/start"> = {}): Promise<RequestResult<"thread/start">> {
    return this.request("thread/start", params);
  }

  /** Starts a turn; `input` is plain text or input parts. Wait for its end with turnEnd(turn.id). */
  startTurn(
    threadId: string,
    input: string | Input,
    extra: Omit<RequestParams<"turn/start">, "threadId" | "input"> = {},
  ): Promise<RequestResult<"turn/start">> {
    return this.request("turn/start", { ...extra, threadId, input: typeof input === "string" ? [{ type: "text", text: input }] : input });
  }

  interrupt(threadId: string, turnId?: string): Promise<RequestResult<"turn/interrupt">> {
    return this.request("turn/interrupt", { threadId, ...(turnId ? { turnId } : {}) });
  }

  readThread(threadId: string, includeTurns = true): Promise<RequestResult<"thread/read">> {
    return this.request("thread/read", { threadId, includeTurns });
  }

  // ---- events ------------------------------------------------------------------------------

  /**
   * Events from now on, in order: every notification (or only one thread's), plus `gap`
   * events. Ends when the client closes; `break` out of the loop to stop listening.
   */
  events(threadId?: string): AsyncIterableIterator<ClientEvent> {
    const entry = { threadId, stream: new EventStream<ClientEvent>(() => this.streams.delete(entry)) };
    if (this.stateValue === "closed") entry.stream.end();
    else this.streams.add(entry);
    return entry.stream;
  }

  /**
   * Calls `listener` synchronously, in order, for every event `events()` would yield (every
   * notification and `gap`); returns a function that removes it. Unlike an `events()` loop it
   * never lags behind: when a request's promise resolves, the listener has seen what came first.
   */
  onEvent(listener: (event: ClientEvent) => void): () => void {
    this.anyListeners.add(listener);
    return () => this.anyListeners.delete(listener);
  }

  /** Calls `listener` for every such event; returns a function that removes it. */
  on<K extends ClientEventName>(event: K, listener: Listener<K>): () => void {
    const set = this.listeners.get(event) ?? new Set();
    this.listeners.set(event, set);
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * The next such event (from now on) that matches. Create the promise before causing the
   * event, e.g. before the request that triggers it. Rejects on timeout and when the client closes.
   */
  waitFor<K extends ClientEventName>(
    event: K,
    predicate: (params: ClientEventMap[K]) => boolean = () => true,
    timeoutMs = this.timeoutMs,
  ): Promise<ClientEventMap[K]> {
    return new Promise((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        offEvent();
        offClosed();
      };
      const timer = timeout(timeoutMs, () => {
        finish();
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for "${event}"`));
      });
      const offEvent = this.on(event, (params) => {
        if (!predicate(params)) return;
        finish();
        resolve(params);
      });
      const offClosed = this.on("closed", ({ error }) => {
        finish();
        reject(error ?? new ConnectionClosedError("Client closed"));
      });
    });
  }

  /**
   * The terminal notification (completed, failed or cancelled) of a turn, whether it has
   * already arrived or not, so there is no race with the turn/start answer.
   */
  turnEnd(turnId: string, timeoutMs = this.timeoutMs): Promise<TurnEnd> {
    const seen = this.turnEnds.get(turnId);
    if (seen) return Promise.resolve(seen);
    const gone = this.deletedWith(turnId);
    if (gone) return Promise.reject(gone);
    return new Promise((resolve, reject) => {
      const stop = (): void => {
        clearTimeout(timer);
        offs.forEach((off) => off());
      };
      const timer = timeout(timeoutMs, () => {
        stop();
        reject(new Error(`Timed out after ${timeoutMs} ms waiting for the end of turn ${turnId}`));
      });
      const check = (): void => {
        const end = this.turnEnds.get(turnId);
        if (!end) return;
        stop();
        resolve(end);
      };
      const offs = [
        this.on("turn/completed", check),
        this.on("turn/failed", check),
        this.on("turn/cancelled", check),
        this.on("thread/deleted", () => {
          const gone = this.deletedWith(turnId);
          if (!gone) return;
          stop();
          reject(gone);
        }),
        this.on("closed", ({ error }) => {
          stop();
          reject(error ?? new ConnectionClosedError("Client closed"));
        }),
      ];
    });
  }

  /**
   * Replaces the approval handler. Whether the server asks this client at all is declared at
   * initialize (capabilities.approvalSupport, on when ClientOptions.onApproval is given).
   */
  onApproval(handler: ApprovalHandler): void {
    this.approvalHandler = handler;
  }

  /** Stops everything: the connection, any reconnection, event streams; a spawned server gets SIGTERM. */
  close(): Promise<void> {
    return this.shutdown();
  }

  // ---- connection lifecycle --------------------------------------------------------------

  /** Opens a link, initializes, and re-subscribes followed threads. Not yet installed as current. */
  private async openSession(): Promise<{ link: Link; conn: RpcConnection }> {
    const link = await openLink(this.target, this.log, this.firstUrl, this.options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    this.opening = link;
    if (this.stateValue === "closed") {
      await link.dispose();
      throw new ConnectionClosedError("Client closed");
    }
    const conn = new RpcConnection(
      link.channel,
      {
        onRequest: (method, params) => this.answerServerRequest(method, params),
        onNotification: (method, params) => this.receive(method, params),
      },
      { logger: this.log, defaultRequestTimeoutMs: this.timeoutMs },
    );
    try {
      const init = await conn.request<RequestResult<"initialize">>("initialize", {
        clientInfo: this.options.clientInfo ?? { name: "switchyard-client", version: VERSION },
        capabilities: this.capabilities(),
      } satisfies RequestParams<"initialize">);
      conn.notify("initialized");
      this.info = init.serverInfo;
      await this.resubscribe(conn);
      return { link, conn };
    } catch (error) {
      conn.close();
      await link.dispose();
      throw error;
    } finally {
      this.opening = undefined;
    }
  }

  private capabilities(): ClientCapabilities {
    return {
      approvalSupport: this.approvalHandler !== undefined,
      streamingSupport: true,
      commandExecutionStreaming: true,
      toolExecutionLifecycle: true,
      ...this.options.capabilities,
    };
  }

  /**
   * Catch-up after a reconnection: each followed thread is re-subscribed from the last seq
   * delivered, so the server replays exactly what was missed. A refusal becomes a `gap`.
   */
  private async resubscribe(conn: RpcConnection): Promise<void> {
    // One at a time: firing them all at once could exceed the server's in-flight cap (-32001).
    for (const threadId of [...this.followed.keys()]) {
      const afterSeq = this.resumePoint(threadId);
      try {
        await conn.request("thread/subscribe", { threadId, afterSeq } satisfies RequestParams<"thread/subscribe">);
      } catch (error) {
        if (!(error instanceof RpcError)) throw error; // the connection failed: retry it all
        this.log.warn({ threadId, afterSeq, code: error.code }, "could not resume a thread's events");
        this.followed.delete(threadId);
        this.emit("gap", { threadId, error });
        this.toStreams({ method: "gap", params: { threadId, error } }, threadId);
      }
    }
  }

  private install(session: { link: Link; conn: RpcConnection }): void {
    this.link = session.link;
    this.conn = session.conn;
    this.stateValue = "connected";
    for (const waiter of this.readyWaiters) waiter.resolve(session.conn);
    this.readyWaiters.clear();
    session.conn.onClose(() => {
      this.connectionLost(session.conn).catch((err: unknown) => this.log.error({ err }, "reconnecting failed"));
    });
  }

  private async connectionLost(conn: RpcConnection): Promise<void> {
    if (conn !== this.conn || this.stateValue === "closed") return;
    const link = this.link;
    this.conn = undefined;
    this.link = undefined;
    const error = new ConnectionClosedError("The connection to the server was lost");
    if (link?.urlIndex !== undefined) this.firstUrl = link.urlIndex + 1;
    if (!this.reconnect) {
      await this.shutdown(error);
      return;
    }
    this.stateValue = "reconnecting";
    this.log.info("connection lost; reconnecting");
    this.emit("disconnected", { error });
    // For stdio the old process must be gone before a new one takes the data directory's lock.
    await link?.dispose();

    const { initialDelayMs, maxDelayMs, maxAttempts } = this.reconnect;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (this.isClosed()) return;
      await this.sleep(backoffDelay(attempt, initialDelayMs, maxDelayMs));
      if (this.isClosed()) return;
      try {
        const session = await this.openSession();
        if (this.isClosed()) {
          session.conn.close();
          await session.link.dispose();
          return;
        }
        this.install(session);
        this.log.info({ attempt }, "reconnected");
        this.emit("reconnected", { attempt });
        return;
      } catch (err) {
        if (this.isClosed()) return;
        this.log.debug({ err, attempt }, "reconnection attempt failed");
      }
    }
    await this.shutdown(new ConnectionClosedError(`Could not reconnect to the server after ${maxAttempts} attempts`));
  }

  /** A method, not a field read: TypeScript would otherwise keep the narrowing across awaits. */
  private isClosed(): boolean {
    return this.stateValue === "closed";
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeBackoff = done;
    });
  }

  /** The current connection, waiting for a reconnection if need be. */
  private connected(method: string, timeoutMs: number): Promise<RpcConnection> {
    if (this.conn && this.stateValue === "connected") return Promise.resolve(this.conn);
    if (this.stateValue === "closed") return Promise.reject(new ConnectionClosedError(`Client closed; "${method}" was not sent`));
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (conn: RpcConnection) => {
          clearTimeout(timer);
          resolve(conn);
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = timeout(timeoutMs, () => {
        this.readyWaiters.delete(waiter);
        reject(new RequestTimeoutError(method, timeoutMs));
      });
      this.readyWaiters.add(waiter);
    });
  }

  private shutdown(error?: Error): Promise<void> {
    this.closing ??= (async () => {
      this.stateValue = "closed";
      this.wakeBackoff?.();
      for (const waiter of this.readyWaiters) waiter.reject(error ?? new ConnectionClosedError("Client closed"));
      this.readyWaiters.clear();
      const conn = this.conn;
      this.conn = undefined;
      conn?.close(); // rejects its pending requests with ConnectionClosedError
      await Promise.all([this.link?.dispose(), this.opening?.dispose()]);
      this.link = undefined;
      for (const { stream } of [...this.streams]) stream.end();
      this.emit("closed", error ? { error } : {});
      this.listeners.clear();
    })();
    return this.closing;
  }

  // ---- incoming --------------------------------------------------------------------------

  private async answerServerRequest(method: string, params: unknown): Promise<unknown> {
    if (method !== "item/approval/request") throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${method}`);
    const handler = this.approvalHandler;
    // An error answer counts as "this client cannot decide"; the server asks others or applies its policy.
    if (!handler) throw new RpcError(ErrorCode.MethodNotFound, "This client has no approval handler");
    return { decision: await handler(params as ApprovalRequest) };
  }

  private receive(method: string, params: unknown): void {
    const p = (typeof params === "object" && params !== null ? params : {}) as { threadId?: unknown; seq?: unknown };
    const threadId = typeof p.threadId === "string" ? p.threadId : undefined;
    if (typeof p.seq === "number") {
      this.highWater = Math.max(this.highWater, p.seq);
      if (threadId !== undefined) {
        // A replay overlapping what was already delivered (after a reconnection): drop it.
        if (p.seq <= (this.lastSeq.get(threadId) ?? -1)) return;
        this.lastSeq.set(threadId, p.seq);
      }
    }
    // Typed by the protocol table, not validated: the server is the one that validates.
    const event = { method, params } as ServerNotification;
    if (event.method === "thread/deleted") {
      this.followed.delete(event.params.threadId);
      remember(this.deletedThreads, event.params.threadId, true);
    }
    if (event.method === "turn/started") remember(this.turnThreads, event.params.turn.id, event.params.threadId);
    if (TURN_END_METHODS.has(event.method)) {
      const end = event as TurnEnd;
      remember(this.turnEnds, end.params.turn.id, end);
      this.turnThreads.delete(end.params.turn.id);
    }
    this.emit(event.method, event.params);
    this.toStreams(event, threadId);
  }

  /**
   * A turn deleted with its thread before its end reached this client has no end to deliver
   * (the server has nothing left to show of it): its `turnEnd` fails as a read of the thread would.
   */
  private deletedWith(turnId: string): RpcError | undefined {
    const threadId = this.turnThreads.get(turnId);
    if (threadId === undefined || !this.deletedThreads.has(threadId)) return undefined;
    return new RpcError(
      AppServerErrorCode.ThreadNotFound,
      `Thread ${threadId} was deleted before the end of turn ${turnId} reached this client`,
      {
        threadId,
      },
    );
  }

  private emit<K extends ClientEventName>(event: K, params: ClientEventMap[K]): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) {
      try {
        (listener as Listener<K>)(params);
      } catch (err) {
        this.log.error({ err, event }, "event listener failed");
      }
    }
  }

  private toStreams(event: ClientEvent, threadId: string | undefined): void {
    for (const listener of [...this.anyListeners]) {
      try {
        listener(event);
      } catch (err) {
        this.log.error({ err, event: event.method }, "event listener failed");
      }
    }
    for (const { threadId: wanted, stream } of this.streams) {
      if (wanted === undefined || wanted === threadId) stream.push(event);
    }
  }

  // ---- following threads -----------------------------------------------------------------

  /** Which threads the server now sends us, mirrored so a reconnection can restore them. */
  private track(method: AppServerRequestMethod, params: unknown, result: unknown): void {
    const threadId = (params as { threadId?: unknown }).threadId;
    switch (method) {
      case "thread/start":
        // A new thread: all of its log is news to us.
        this.follow((result as RequestResult<"thread/start">).thread.id, 0);
        break;
      case "thread/subscribe": {
        const { afterSeq } = params as RequestParams<"thread/subscribe">;
        if (typeof threadId === "string") this.follow(threadId, afterSeq ?? this.highWater);
        break;
      }
      case "thread/resume":
      case "turn/start":
      case "turn/enqueue":
        if (typeof threadId === "string") this.follow(threadId, this.highWater);
        break;
      case "thread/unsubscribe":
      case "thread/delete":
        if (typeof threadId === "string") this.followed.delete(threadId);
        break;
      default:
        break;
    }
  }

  /**
   * `from` is where a catch-up would start if nothing is delivered before a disconnection.
   * For threads followed "from now", the highest seq seen anywhere is safe: everything the
   * server sent before answering arrived before the answer, so nothing owed lies below it.
   */
  private follow(threadId: string, from: number): void {
    if (!this.followed.has(threadId)) this.followed.set(threadId, from);
  }

  private resumePoint(threadId: string): number {
    return Math.max(this.lastSeq.get(threadId) ?? 0, this.followed.get(threadId) ?? 0);
  }
}
