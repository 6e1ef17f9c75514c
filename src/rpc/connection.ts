// The JSON-RPC 2.0 engine shared by every protocol face: one RpcConnection per MessageChannel.
// It answers the peer's requests (concurrently, with an in-flight cap), delivers its
// notifications in arrival order, and sends our own requests and routes their responses by id.
import { newLocalId } from "../ids.js";
import { silentLogger, type Logger } from "../log.js";
import type { ChannelInfo, MessageChannel } from "../transport/channel.js";
import { ErrorCode, RpcError } from "./errors.js";
import { RawJson } from "./raw-json.js";

/** A request id as it appears on the wire; null only when the spec allows it. */
export type JsonRpcId = string | number | null;

export interface RequestContext {
  connection: RpcConnection;
  /** Aborted when the connection closes. */
  signal: AbortSignal;
}

export interface RpcHandlers {
  /** Throw RpcError for protocol errors; any other error becomes -32603 "Internal error". */
  onRequest(method: string, params: unknown, ctx: RequestContext): unknown | Promise<unknown>;
  /** Called synchronously, in arrival order. */
  onNotification?(method: string, params: unknown, ctx: RequestContext): void;
}

/**
 * Error codes the engine itself answers with, outside JSON-RPC's reserved ones. A protocol
 * face whose own table gives these numbers other meanings chooses its own with useErrorCodes.
 */
export interface EngineErrorCodes {
  /** The in-flight cap was reached (default -32001). */
  overloaded: number;
}

export interface ConnectionOptions {
  logger?: Logger;
  /** Incoming requests whose handler has not finished; more are answered as overloaded (-32001). Default 64. */
  maxInFlight?: number;
  /** Timeout of our outgoing requests. Default 60000; 0 or Infinity disables it. */
  defaultRequestTimeoutMs?: number;
  /**
   * "required" (default): an incoming request or notification without `"jsonrpc": "2.0"` is
   * invalid. "optional": one without the member is accepted (a present one must still be
   * "2.0"), for peers that leave it out, like Codex's app-server; what we send has it.
   * "asPeer": the peer's first request decides. Without the member, the peer is one that leaves
   * it out (Codex's clients): from then on it is optional, and what we send leaves it out too;
   * with it, the connection is "required".
   */
  jsonrpcMember?: "required" | "optional" | "asPeer";
  /**
   * Unsent output (bytes) past which the connection counts as behind: faces then stop sending
   * it live events and catch it up from the event log once it has drained. Default 1 MiB.
   */
  outputBudgetBytes?: number;
}

export const DEFAULT_OUTPUT_BUDGET_BYTES = 1024 * 1024;

/** How every message we serialize begins. */
const JSONRPC_PREFIX = '{"jsonrpc":"2.0",';

export interface RequestOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

export class RequestTimeoutError extends Error {
  constructor(
    readonly method: string,
    readonly timeoutMs: number,
  ) {
    super(`Request "${method}" timed out after ${timeoutMs} ms`);
    this.name = "RequestTimeoutError";
  }
}

export class ConnectionClosedError extends Error {
  constructor(message = "Connection closed") {
    super(message);
    this.name = "ConnectionClosedError";
  }
}

interface PendingRequest {
  method: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

interface ErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** A serialized response, or a promise of one; undefined when nothing is to be sent. */
type Reply = string | Promise<string> | undefined;

const DEFAULT_MAX_IN_FLIGHT = 64;
const DEFAULT_TIMEOUT_MS = 60_000;

export class RpcConnection {
  readonly id = newLocalId("conn");
  readonly info: ChannelInfo;

  private readonly log: Logger;
  private readonly maxInFlight: number;
  private readonly defaultTimeoutMs: number;
  private jsonrpcOptional: boolean;
  /** An "asPeer" connection before its first request. */
  private peerUndecided: boolean;
  private omitJsonrpc = false;
  private readonly abort = new AbortController();
  private readonly pending = new Map<number, PendingRequest>();
  private readonly closeListeners: Array<() => void> = [];
  private nextId = 0;
  private inFlight = 0;
  /** Replies being worked on (a request's or a batch's); the connection closes after them once input ended. */
  private replying = 0;
  private inputEnded = false;
  private isClosed = false;
  private codes: EngineErrorCodes = { overloaded: ErrorCode.Overloaded };
  private readonly outputBudgetBytes: number;

  constructor(
    private readonly channel: MessageChannel,
    private readonly handlers: RpcHandlers,
    options: ConnectionOptions = {},
  ) {
    this.info = channel.info;
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.defaultTimeoutMs = options.defaultRequestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.jsonrpcOptional = options.jsonrpcMember === "optional";
    this.peerUndecided = options.jsonrpcMember === "asPeer";
    this.outputBudgetBytes = options.outputBudgetBytes ?? DEFAULT_OUTPUT_BUDGET_BYTES;
    this.log = (options.logger ?? silentLogger).child({ conn: this.id, transport: channel.info.transport });
    channel.onMessage((text) => this.handleText(text));
    channel.onOversized((size, limit) => this.handleOversized(size, limit));
    channel.onClose(() => this.shutdown());
    channel.onInputEnd?.(() => this.finishInput());
  }

  /** Replaces the engine's own error codes from now on (a face calls this when it is chosen). */
  useErrorCodes(codes: Partial<EngineErrorCodes>): void {
    this.codes = { ...this.codes, ...codes };
  }

  /** Whether the peer leaves "jsonrpc" out of its messages (and so do we), as Codex's clients do. */
  get omitsJsonrpc(): boolean {
    return this.omitJsonrpc;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Output sent but not yet taken by the peer, in bytes (0 when the transport cannot tell). */
  pendingBytes(): number {
    return this.channel.pendingBytes?.() ?? 0;
  }

  /** Whether the peer is behind: more unsent output than the connection's budget. */
  overBudget(): boolean {
    return this.pendingBytes() > this.outputBudgetBytes;
  }

  /** Resolves once the peer has taken most of its pending output (or the connection closed). */
  whenDrained(): Promise<void> {
    return this.channel.whenDrained?.(Math.floor(this.outputBudgetBytes / 4)) ?? Promise.resolve();
  }

  notify(method: string, params?: unknown): void {
    if (this.isClosed) return;
    const message = params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params };
    this.sendText(JSON.stringify(message));
  }

  request<T = unknown>(method: string, params?: unknown, opts: RequestOptions = {}): Promise<T> {
    if (this.isClosed || this.inputEnded) return Promise.reject(new ConnectionClosedError());
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(abortReason(signal));

    const id = ++this.nextId;
    let text: string;
    try {
      const message = params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params };
      text = JSON.stringify(message);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }

    return new Promise<T>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => entry.reject(abortReason(signal!));
      const cleanup = (): void => {
        this.pending.delete(id);
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const entry: PendingRequest = {
        method,
        resolve: (value) => {
          cleanup();
          resolve(value as T);
        },
        reject: (error) => {
          cleanup();
          reject(error);
        },
      };
      this.pending.set(id, entry);
      if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => entry.reject(new RequestTimeoutError(method, timeoutMs)), timeoutMs);
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.sendText(text);
    });
  }

  onClose(listener: () => void): void {
    if (this.isClosed) queueMicrotask(listener);
    else this.closeListeners.push(listener);
  }

  close(): void {
    this.channel.close();
    this.shutdown(); // in case the channel does not report its own close synchronously
  }

  // --- incoming ---

  private handleText(text: string): void {
    if (this.isClosed) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.sendText(errorReply(null, { code: ErrorCode.ParseError, message: "Parse error" }));
      return;
    }

    if (!Array.isArray(message)) {
      this.sendReply(this.handleOne(message));
      return;
    }
    if (message.length === 0) {
      this.sendText(errorReply(null, { code: ErrorCode.InvalidRequest, message: "Invalid Request: empty batch" }));
      return;
    }
    // Every element is dispatched now (so handlers start in arrival order); the replies go out
    // together as one array once all are done, and not at all if there are none.
    const replies = message.map((m) => this.handleOne(m)).filter((r): r is string | Promise<string> => r !== undefined);
    if (replies.length === 0) return;
    this.replyLater(Promise.all(replies).then((parts) => `[${parts.map((part) => this.styled(part)).join(",")}]`));
  }

  private handleOne(message: unknown): Reply {
    if (!isRecord(message)) return this.invalid(null, "expected an object");
    const hasId = "id" in message;
    const idValid = !hasId || message.id === null || typeof message.id === "string" || typeof message.id === "number";
    const replyId: JsonRpcId = hasId && idValid ? (message.id as JsonRpcId) : null;

    if (!("method" in message) && ("result" in message || "error" in message)) {
      this.routeResponse(message);
      return undefined;
    }
    if (this.peerUndecided && typeof message.method === "string") {
      this.peerUndecided = false;
      this.jsonrpcOptional = this.omitJsonrpc = !("jsonrpc" in message);
    }
    const versionOk = message.jsonrpc === "2.0" || (this.jsonrpcOptional && !("jsonrpc" in message));
    if (!versionOk) return this.invalid(replyId, '"jsonrpc" must be "2.0"');
    if (!idValid) return this.invalid(null, '"id" must be a string, a number or null');
    if (typeof message.method !== "string") return this.invalid(replyId, '"method" must be a string');

    if (!hasId) {
      this.deliverNotification(message.method, message.params);
      return undefined;
    }
    return this.handleRequest(replyId, message.method, message.params);
  }

  private handleRequest(id: JsonRpcId, method: string, params: unknown): Reply {
    if (this.inFlight >= this.maxInFlight) {
      this.log.warn({ method, limit: this.maxInFlight }, "request refused: in-flight limit reached");
      return errorReply(id, {
        code: this.codes.overloaded,
        message: "Server overloaded; retry later.",
        data: { reason: "inFlightLimit", limit: this.maxInFlight },
      });
    }
    this.inFlight++;
    let result: unknown;
    try {
      result = this.handlers.onRequest(method, params, this.context());
    } catch (err) {
      this.inFlight--;
      return this.replyForError(id, method, err);
    }
    if (!isPromiseLike(result)) {
      this.inFlight--;
      return resultReply(id, result, this.log);
    }
    return Promise.resolve(result)
      .then(
        (value) => resultReply(id, value, this.log),
        (err: unknown) => this.replyForError(id, method, err),
      )
      .finally(() => this.inFlight--);
  }

  private deliverNotification(method: string, params: unknown): void {
    try {
      const ret: unknown = this.handlers.onNotification?.(method, params, this.context());
      if (isPromiseLike(ret)) {
        Promise.resolve(ret).catch((err: unknown) => this.log.error({ err, method }, "notification handler failed"));
      }
    } catch (err) {
      this.log.error({ err, method }, "notification handler failed");
    }
  }

  private routeResponse(message: Record<string, unknown>): void {
    const entry = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
    if (!entry) {
      // E.g. a late answer to a request that timed out, or the peer reporting an error with id null.
      this.log.debug({ id: message.id, error: message.error }, "dropping response with no pending request");
      return;
    }
    if ("error" in message) {
      const e = message.error;
      if (isRecord(e) && typeof e.code === "number" && typeof e.message === "string") {
        entry.reject(new RpcError(e.code, e.message, e.data));
      } else {
        entry.reject(new RpcError(ErrorCode.InternalError, "Malformed error response", e));
      }
    } else {
      entry.resolve(message.result);
    }
  }

  private handleOversized(size: number, limit: number): void {
    this.log.info({ size, limit }, "oversized message discarded");
    this.sendText(
      errorReply(null, {
        code: ErrorCode.InvalidRequest,
        message: `Message too large: ${size} bytes exceeds the ${limit}-byte limit`,
        data: { reason: "messageTooLarge", size, limit },
      }),
    );
  }

  // --- helpers ---

  private context(): RequestContext {
    return { connection: this, signal: this.abort.signal };
  }

  private invalid(id: JsonRpcId, why: string): string {
    return errorReply(id, { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${why}` });
  }

  private replyForError(id: JsonRpcId, method: string, err: unknown): string {
    if (err instanceof RpcError) return errorReply(id, err.toJSON(), this.log);
    // Unexpected failures are logged here and reported without details to avoid leaking internals.
    this.log.error({ err, method }, "request handler failed");
    return errorReply(id, { code: ErrorCode.InternalError, message: "Internal error" });
  }

  private sendReply(reply: Reply): void {
    if (reply === undefined) return;
    if (typeof reply === "string") this.sendText(reply);
    else this.replyLater(reply);
  }

  private replyLater(reply: Promise<string>): void {
    this.replying++;
    void reply.then((text) => {
      this.sendText(text);
      this.replying--;
      this.closeIfAnswered();
    });
  }

  /**
   * The peer sent all it will (e.g. `printf '...' | switchyard app-server`): what it asked is
   * still answered, then the connection closes. Requests of ours can no longer be answered.
   */
  private finishInput(): void {
    this.inputEnded = true;
    for (const entry of [...this.pending.values()]) {
      entry.reject(new ConnectionClosedError(`The peer's input ended before "${entry.method}" was answered`));
    }
    this.closeIfAnswered();
  }

  private closeIfAnswered(): void {
    if (this.inputEnded && this.replying === 0) this.close();
  }

  /** Sends what we serialized, in the peer's style (a batch's parts are styled by the caller; its `[` is left as is). */
  private sendText(text: string): void {
    if (!this.isClosed) this.channel.send(this.styled(text));
  }

  /** A message we serialized (always with "jsonrpc" first), without the member for a peer that omits it. */
  private styled(text: string): string {
    return this.omitJsonrpc && text.startsWith(JSONRPC_PREFIX) ? `{${text.slice(JSONRPC_PREFIX.length)}` : text;
  }

  private shutdown(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.abort.abort(new ConnectionClosedError());
    for (const entry of [...this.pending.values()]) {
      entry.reject(new ConnectionClosedError(`Connection closed before "${entry.method}" was answered`));
    }
    for (const listener of this.closeListeners.splice(0)) {
      try {
        listener();
      } catch (err) {
        this.log.error({ err }, "close listener failed");
      }
    }
  }
}

// Responses are serialized one by one so a result that cannot be serialized (a BigInt, a cycle)
// fails only its own request, and batch replies are just the parts joined.
function resultReply(id: JsonRpcId, result: unknown, log: Logger): string {
  try {
    // `undefined` would drop the "result" member entirely; the spec requires it.
    if (result instanceof RawJson) return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result.json}}`;
    return JSON.stringify({ jsonrpc: "2.0", id, result: result === undefined ? null : result });
  } catch (err) {
    log.error({ err }, "could not serialize a result");
    return errorReply(id, { code: ErrorCode.InternalError, message: "Internal error" });
  }
}

function errorReply(id: JsonRpcId, error: ErrorObject, log?: Logger): string {
  try {
    return JSON.stringify({ jsonrpc: "2.0", id, error });
  } catch (err) {
    log?.error({ err }, "could not serialize error data");
    return JSON.stringify({ jsonrpc: "2.0", id, error: { code: error.code, message: error.message } });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function"
  );
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error("Request aborted");
}
