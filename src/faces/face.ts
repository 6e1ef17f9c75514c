// A face is one client protocol over the shared runtime: its protocol table, its handlers, and
// the mapping between its wire messages and runtime calls/events. Every face is listed once, in
// the registry (./index.ts); the server, the schema exporter and the docs derive from it.
import type { Logger } from "../log.js";
import type { ListedModel, ListOptions } from "../providers/model-catalog.js";
import type { EngineErrorCodes, RequestContext, RpcConnection, RpcHandlers } from "../rpc/connection.js";
import type { ProtocolTable } from "../rpc/protocol-table.js";
import type { RuntimeApi } from "../runtime/api.js";

/** What every face is given. */
export interface FaceHost {
  runtime: RuntimeApi;
  log: Logger;
  serverVersion: string;
}

/** What the server can tell before its runtime is up, for answers given that early (Face.answerEarly). */
export interface EarlyFacts {
  serverVersion: string;
  /** The model catalog, as the runtime's listModels gives it: made from the providers' settings alone. */
  models(options?: ListOptions): Promise<ListedModel[]>;
  /** The names of the runtime's tools, as its toolNames gives them. */
  toolNames: readonly string[];
  log: Logger;
}

/** One connection of the shared JSON-RPC engine (stdio, WebSocket, Unix socket). */
export interface FaceContext extends FaceHost {
  connection: RpcConnection;
}

/**
 * A byte stream the face frames itself (e.g. ACP through its SDK). Served from the start, while
 * the runtime still loads: the face can answer its handshake before it, and waits for it otherwise.
 */
export interface StreamContext extends Omit<FaceHost, "runtime"> {
  runtime: Promise<RuntimeApi>;
  /** Called once the face reads the stream (its code loaded): a handshake waiting there can be answered. */
  serving(): void;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

/** A listener a face runs itself (e.g. an HTTP + WebSocket relay), with its own options. */
export interface ListenContext extends FaceHost {
  options: Record<string, unknown>;
  /** Asks the whole server to stop (a face's own shutdown request, e.g. daemon.shutdown). */
  requestStop(): void;
}

export interface FaceListener {
  url?: string;
  close(): Promise<void>;
}

export interface Face {
  /** One word, used by `--face`, the schema directory and the reference page. */
  readonly name: string;
  /**
   * For faces chosen per connection on the shared listeners: whether the connection's first
   * `initialize` is written in this face's protocol: its params, and whether the peer leaves
   * "jsonrpc" out of its messages (Codex's clients do).
   */
  readonly claims?: (initializeParams: unknown, peer: { omitsJsonrpc: boolean }) => boolean;
  /** Whether the face's clients may leave "jsonrpc" out of their messages (Codex's do). */
  readonly peersOmitJsonrpc?: boolean;
  /**
   * The answer to a connection's initialize (or its promise) when the face can give it before the
   * runtime is up (a stdio client is answered while the rest of the server loads); undefined
   * leaves it to `open`'s handlers. The handlers still receive that initialize once the answer has
   * been given, before any later request, and must answer it the same.
   */
  readonly answerEarly?: (initializeParams: unknown, facts: EarlyFacts) => unknown;
  /**
   * For a face whose protocol has no initialize: serves a request whose work needs no runtime
   * (its answer or its promise), when it comes while the runtime still loads and before any
   * request that waits for it; undefined leaves the request to `open`'s handlers, which never
   * see one served here.
   */
  readonly serveEarly?: (method: string, params: unknown, ctx: RequestContext) => unknown;
  /** The codes the RPC engine answers with on this face's connections, where they differ from its defaults. */
  readonly engineErrorCodes?: Partial<EngineErrorCodes>;
  /** Serves one JSON-RPC connection. */
  readonly open?: (ctx: FaceContext) => RpcHandlers;
  /** Starts loading the code `open` needs (a connection chose the face before the runtime was up). */
  readonly preload?: () => void;
  /** Serves a byte stream with the face's own framing; resolves when the stream has closed. */
  readonly serveStream?: (ctx: StreamContext) => Promise<void>;
  /** Starts the face's own listener. */
  readonly listen?: (ctx: ListenContext) => Promise<FaceListener>;
  /** The protocol table, for `switchyard schema` and docs/reference (loaded on demand). */
  readonly protocol?: () => Promise<ProtocolTable>;
}

/**
 * `open` and `preload` of a face whose code (tables, session) loads only when a connection
 * chooses it, keeping start-up free of faces nobody uses. Requests and notifications wait for
 * the load, in order.
 */
export function lazyFace(name: string, load: () => Promise<(ctx: FaceContext) => RpcHandlers>): Required<Pick<Face, "open" | "preload">> {
  let loading: Promise<(ctx: FaceContext) => RpcHandlers> | undefined;
  const loaded = (): Promise<(ctx: FaceContext) => RpcHandlers> => (loading ??= load());
  return {
    // A failed load is reported by the connection's first request.
    preload: () => void loaded().catch(() => {}),
    open: (ctx) => {
      const handlers = loaded().then((open) => open(ctx));
      return {
        onRequest: async (method, params, requestCtx) => (await handlers).onRequest(method, params, requestCtx),
        onNotification: (method, params, requestCtx) =>
          void handlers
            .then((h) => h.onNotification?.(method, params, requestCtx))
            .catch((error: unknown) => ctx.log.error({ err: error, face: name, method }, "notification handler failed")),
      };
    },
  };
}
