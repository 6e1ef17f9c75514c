// Starts one Switchyard server: the listeners that carry the protocol faces (stdio and/or
// WebSocket, and faces' own) over one runtime. A stdio client's initialize is answered as soon
// as it arrives, while the runtime side (server-runtime.ts: zod, SQLite, the tables) loads.
import { setImmediate as loopTurn, setTimeout as delay } from "node:timers/promises";
import type { ProviderSettings } from "./config/file.js";
import type { Logger } from "./log.js";
import type { ProviderSetup } from "./config/providers.js";
import type { EarlyFacts, Face, FaceListener } from "./faces/face.js";
import { FaceRouter } from "./faces/face-router.js";
import { DEFAULT_FACE, FACES, findFace, refuseBeforeInitialize, routedFaces } from "./faces/index.js";
import { RpcConnection } from "./rpc/connection.js";
import type { Runtime } from "./runtime/runtime.js";
import type { AssembledRuntime } from "./server-runtime.js";
import { acquireDataDirLock } from "./store/lock.js";
import type { BackendSpec } from "./domain/model.js";
import type { MessageChannel } from "./transport/channel.js";
import { SERVER_TOOL_NAMES } from "./tools/names.js";
import { createStdioChannel } from "./transport/stdio.js";
import type { RunningWebSocketServer } from "./transport/websocket.js";
import { VERSION } from "./version.js";

/**
 * How long the runtime side waits for an early answer still being made before it loads anyway:
 * longer than a local answer takes, shorter than a remote models endpoint's.
 */
const EARLY_ANSWER_WAIT_MS = 30;

export interface ServerConfig {
  /**
   * The face stdio (and, for JSON-RPC faces, WebSocket) connections speak, by name; by default
   * each connection's face is chosen by its first initialize. A face that frames its own stream
   * (acp) serves stdio alone.
   */
  face?: string;
  /** The face is stdio's only: WebSocket connections choose theirs at initialize (e.g. AppServer clients watching). */
  faceOnStdioOnly?: boolean;
  dataDir: string;
  stdio: boolean;
  /** Faces that run a listener of their own, with their options. */
  faceListeners?: Array<{ face: string; options: Record<string, unknown> }>;
  /** `anyPath`: accept the upgrade on any path (claude-app-server style), not only `/ws` and `/`. */
  websocket?: { host: string; port: number; anyPath?: boolean };
  token?: string;
  allowedOrigins: string[];
  allowedHosts: string[];
  maxMessageBytes: number;
  maxInFlight: number;
  pingIntervalMs: number;
  /** Unsent output per connection past which it is caught up from the event log (see EventFeed). */
  outputBudgetBytes?: number;
  /** A WebSocket peer that takes none of its pending output for this long is closed. */
  stallTimeoutMs?: number;
  /** How long running turns wait for the data directory to accept writes again before they fail. */
  storageTimeoutMs?: number;
  /** PostgreSQL URL of the store; SQLite in dataDir when unset. */
  storeUrl?: string;
  /** With storeUrl: how long a node that stopped beating keeps its threads. */
  leaseTtlMs?: number;
  /** The directories whose threads this server runs (a cluster node that reaches only some); all when absent. */
  workspaceRoots?: string[];
  /** A lost cluster node's running turns: continued (default) or failed. */
  failover?: "continue" | "fail";
  /** Turns that run at once in this server; more wait, started. */
  maxRunningTurns?: number;
  provider?: string;
  model?: string;
  /** The config file's `providers` section: keys and endpoints, under the environment's. */
  providerSettings?: ProviderSettings;
  approvalTimeoutMs: number;
  commandTimeoutMs: number;
  /** The backend of threads that name none (default: the built-in engine). */
  backend?: BackendSpec;
  /** Exit after this long with no WebSocket client and no running turn (servers the Hub starts). */
  exitWhenIdleMs?: number;
  /** How long an external agent's process is kept for an idle thread. */
  agentIdleTimeoutMs?: number;
  env: NodeJS.ProcessEnv;
}

export interface RunningServer {
  runtime: Runtime;
  websocketUrl?: string;
  /** Resolves when the server has stopped (stdio closed and no turn left, or stop()). */
  closed: Promise<void>;
  stop(): Promise<void>;
}

export async function startServer(config: ServerConfig, log: Logger): Promise<RunningServer> {
  const forced = config.face === undefined ? undefined : findFace(config.face);
  if (config.face !== undefined && !forced) {
    throw new Error(`Unknown face "${config.face}"; choose one of: ${FACES.map((f) => f.name).join(", ")}.`);
  }
  const listenerFaces = (config.faceListeners ?? []).map(({ face, options }) => {
    const found = findFace(face);
    if (!found?.listen) throw new Error(`The ${face} face runs no listener of its own.`);
    return { listen: found.listen, options };
  });
  // Loaded only when needed: a stdio-only server starts faster without it.
  const websocket = config.websocket ? await import("./transport/websocket.js") : undefined;
  if (config.websocket && websocket) websocket.assertSafeBind(config.websocket.host, config.token);
  // A database that cannot be opened ends the server before it answers anyone.
  const database = config.storeUrl
    ? await (
        await import("./store/postgres-store.js")
      ).PostgresStore.open(config.storeUrl, {
        onError: (err) => log.warn({ err }, "database"),
        onNotice: (message) => log.warn(message),
        ...(config.leaseTtlMs ? { leaseTtlMs: config.leaseTtlMs } : {}),
      })
    : undefined;

  const lock = acquireDataDirLock(config.dataDir);

  // Connections opened before the runtime is up (stdio, at once) wait for it; it never rejects:
  // a server whose runtime cannot start stops (below).
  let runtimeReady!: (assembled: AssembledRuntime) => void;
  const assembled = new Promise<AssembledRuntime>((resolve) => (runtimeReady = resolve));
  const runtimeOf = assembled.then((ready) => ready.runtime);

  // The providers are set up once, for the runtime and for answers given before it is up.
  let providerSetup: Promise<ProviderSetup> | undefined;
  const providers = (): Promise<ProviderSetup> =>
    (providerSetup ??= import("./config/providers.js").then(({ setUpProviders }) => setUpProviders(config, log)));
  const early: EarlyFacts = {
    serverVersion: VERSION,
    models: async (options) => (await providers()).catalog.list(options),
    toolNames: SERVER_TOOL_NAMES,
    log,
  };

  // Early answers still being made (the claude dialect's waits for the model catalog).
  const answeringEarly: Array<Promise<unknown>> = [];

  const forcedJsonRpc = forced?.open ? forced : undefined;
  const serve = (channel: MessageChannel, face: Face | undefined, runtime: Runtime | Promise<Runtime>): void => {
    // The face needs the connection to talk back, and the connection needs the face's
    // handlers; the router is created right after the connection, before any message arrives.
    let router: FaceRouter | undefined;
    const afterAnswer = (): void => void assembled.then((ready) => ready.prepareFirstTurn());
    const connection = new RpcConnection(
      channel,
      {
        onRequest: (method, params, ctx) => {
          const answer = router?.onRequest(method, params, ctx);
          void Promise.resolve(answer).then(afterAnswer, afterAnswer);
          return answer;
        },
        onNotification: (method, params, ctx) => router?.onNotification(method, params, ctx),
      },
      {
        logger: log,
        maxInFlight: config.maxInFlight,
        // Codex's clients leave "jsonrpc" out; their first request tells (and chooses the codex face).
        jsonrpcMember: face === undefined || face.peersOmitJsonrpc ? "asPeer" : "required",
        ...(config.outputBudgetBytes ? { outputBudgetBytes: config.outputBudgetBytes } : {}),
      },
    );
    router = new FaceRouter({
      faces: routedFaces(),
      fallback: DEFAULT_FACE,
      connection,
      log,
      serverVersion: VERSION,
      runtime,
      ...(runtime instanceof Promise ? { early, answeringEarly: (answered) => answeringEarly.push(answered) } : {}),
      notInitialized: refuseBeforeInitialize,
      forced: face,
    });
  };

  // A client that goes away does not kill its turns: with no other listener, the server exits
  // once the running turns have finished. The stdio client may leave before the server has
  // started: stopping waits for that.
  let started!: () => void;
  const whenStarted = new Promise<void>((resolve) => (started = resolve));
  const stdioClosed = (): void => {
    whenStarted
      .then(async () => {
        if (ws) return;
        await runtime.idle();
        await stop();
      })
      .catch((error: unknown) => log.error({ err: error }, "could not stop cleanly"));
  };

  let stdioChannel: MessageChannel | undefined;
  if (config.stdio && forced?.serveStream) {
    let serving!: () => void;
    const reading = new Promise<void>((resolve) => (serving = resolve));
    forced
      .serveStream({ runtime: runtimeOf, log, serverVersion: VERSION, input: process.stdin, output: process.stdout, serving })
      .catch((error: unknown) => log.error({ err: error, face: forced.name }, "the stdio connection failed"))
      .finally(() => {
        serving();
        stdioClosed();
      });
    // As for JSON-RPC faces below: a handshake already waiting on stdin is answered before the
    // runtime side loads (its modules are compiled in one go, with the event loop stopped).
    await reading;
    await loopTurn();
    await loopTurn();
  }
  if (config.stdio && !forced?.serveStream) {
    stdioChannel = createStdioChannel(process.stdin, process.stdout, {
      maxMessageBytes: config.maxMessageBytes,
      outputOutlivesInput: true,
    });
    serve(stdioChannel, forcedJsonRpc, runtimeOf);
    // One turn of the event loop first, so an initialize already waiting on stdin is answered
    // before the runtime side loads.
    await loopTurn();
  }
  let runtime: Runtime;
  let store: AssembledRuntime["store"];
  try {
    // The providers' code (part of the runtime's) loads on its own first: an early answer made
    // from the model catalog (the claude dialect's) then waits for it alone, not for it compiled
    // alongside the runtime's; the catalog's requests, if any, go on while the runtime loads.
    const setup = await providers();
    // Compiling the runtime side stops the event loop for ~40 ms: an early answer that is
    // nearly made (the catalog with no provider configured asks a local port that refuses)
    // goes out first. One asking a remote provider's models endpoint goes on alongside.
    if (answeringEarly.length > 0) {
      await Promise.race([Promise.all(answeringEarly), delay(EARLY_ANSWER_WAIT_MS, undefined, { ref: false })]);
      await loopTurn();
    }
    const ready = await (
      await import("./server-runtime.js")
    ).assembleRuntime(config, log, {
      providers: setup,
      ...(database ? { store: database } : {}),
    });
    ({ runtime, store } = ready);
    runtimeReady(ready);
  } catch (error) {
    lock.release();
    throw error;
  }

  let ws: RunningWebSocketServer | undefined;
  if (config.websocket && websocket) {
    ws = await websocket.startWebSocketServer(
      {
        ...config.websocket,
        ...(config.token ? { token: config.token } : {}),
        allowedOrigins: config.allowedOrigins,
        allowedHosts: config.allowedHosts,
        maxMessageBytes: config.maxMessageBytes,
        pingIntervalMs: config.pingIntervalMs,
        ...(config.stallTimeoutMs ? { stallTimeoutMs: config.stallTimeoutMs } : {}),
        // Not while the store cannot be written (a full disk, an unreachable database): a load
        // balancer sends new clients to another node meanwhile.
        readiness: () => (store.storageStatus().available ? "ready" : "storageUnavailable"),
        logger: log,
      },
      (channel) => serve(channel, config.faceOnStdioOnly ? undefined : forcedJsonRpc, runtime),
    );
    log.info({ url: ws.url }, "listening");
  }

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  let stopping: Promise<void> | undefined;
  const requestStop = (): void => void stop().catch((error: unknown) => log.error({ err: error }, "could not stop cleanly"));
  const ownListeners: FaceListener[] = [];
  for (const { listen, options } of listenerFaces) {
    ownListeners.push(await listen({ runtime, log, serverVersion: VERSION, options, requestStop }));
  }

  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      try {
        await ws?.close();
        await Promise.all(ownListeners.map((listener) => listener.close()));
        await runtime.shutdown();
        await store.close();
      } finally {
        // Whatever failed above, the data directory is free again and the process can exit.
        lock.release();
        resolveClosed();
      }
    })());

  stdioChannel?.onClose(stdioClosed);
  if (config.exitWhenIdleMs && ws) exitWhenIdle(config.exitWhenIdleMs, ws, runtime, requestStop, log);
  log.info({ startupMs: Math.round(performance.now()), version: VERSION, store: config.storeUrl ? "postgres" : "sqlite" }, "ready");
  started();
  return { runtime, ...(ws ? { websocketUrl: ws.url } : {}), closed, stop };
}

/** Stops the server once it has had no WebSocket client and no running turn for `idleMs`. */
function exitWhenIdle(idleMs: number, ws: RunningWebSocketServer, runtime: Runtime, stop: () => void, log: Logger): void {
  let idleSince = Date.now();
  const timer = setInterval(
    () => {
      if (ws.connectionCount() > 0 || runtime.hasRunningTurns()) idleSince = Date.now();
      else if (Date.now() - idleSince >= idleMs) {
        clearInterval(timer);
        log.info({ idleMs }, "idle: stopping");
        stop();
      }
    },
    Math.min(1000, Math.max(50, idleMs / 4)),
  );
  timer.unref();
}
