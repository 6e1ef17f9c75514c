// Assembles one Switchyard server: store, runtime, and the listeners that carry the protocol
// faces (stdio and/or WebSocket).
import { setUpProviders } from "./config/providers.js";
import type { ProviderSettings } from "./config/file.js";
import type { Logger } from "./log.js";
import type { Face, FaceListener } from "./faces/face.js";
import { FaceRouter } from "./faces/face-router.js";
import { FACES, findFace, refuseBeforeInitialize, routedFaces } from "./faces/index.js";
import { RpcConnection } from "./rpc/connection.js";
import { Runtime } from "./runtime/runtime.js";
import { acquireDataDirLock } from "./store/lock.js";
import { openStore } from "./store/sqlite-store.js";
import { Backends, DEFAULT_AGENT_IDLE_TIMEOUT_MS } from "./backends/index.js";
import type { BackendSpec } from "./domain/model.js";
import { createDefaultRegistry } from "./tools/registry.js";
import path from "node:path";
import type { MessageChannel } from "./transport/channel.js";
import { createStdioChannel } from "./transport/stdio.js";
import type { RunningWebSocketServer } from "./transport/websocket.js";
import { VERSION } from "./version.js";

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
  provider?: string;
  model?: string;
  /** The config file's `providers` section: keys and endpoints, under the environment's. */
  providerSettings?: ProviderSettings;
  approvalTimeoutMs: number;
  commandTimeoutMs: number;
  /** The backend of threads that name none (default: the built-in engine). */
  backend?: BackendSpec;
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
  // Loaded only when needed: a stdio-only server starts faster without it.
  const websocket = config.websocket ? await import("./transport/websocket.js") : undefined;
  if (config.websocket && websocket) websocket.assertSafeBind(config.websocket.host, config.token);
  const forced = config.face === undefined ? undefined : findFace(config.face);
  if (config.face !== undefined && !forced) {
    throw new Error(`Unknown face "${config.face}"; choose one of: ${FACES.map((f) => f.name).join(", ")}.`);
  }
  const listenerFaces = (config.faceListeners ?? []).map(({ face, options }) => {
    const found = findFace(face);
    if (!found?.listen) throw new Error(`The ${face} face runs no listener of its own.`);
    return { listen: found.listen, options };
  });
  const providers = setUpProviders(config, log);
  const lock = acquireDataDirLock(config.dataDir);
  const store = openStore(config.dataDir);
  const tools = createDefaultRegistry();
  const backends = new Backends(
    {
      tools,
      resolveProvider: providers.resolveProvider,
      models: providers.catalog,
      defaults: { ...providers.defaults, commandTimeoutMs: config.commandTimeoutMs },
    },
    {
      log,
      env: config.env,
      agentRegistryDir: path.join(config.dataDir, "agents"),
      idleTimeoutMs: config.agentIdleTimeoutMs ?? DEFAULT_AGENT_IDLE_TIMEOUT_MS,
    },
    config.backend,
  );
  backends.reapOrphans();
  const runtime = new Runtime({
    store,
    backends,
    tools,
    models: providers.catalog,
    logger: log,
    defaults: {
      backend: config.backend ?? { type: "builtin" },
      ...(providers.defaults.model ? { model: providers.defaults.model } : {}),
      approvalTimeoutMs: config.approvalTimeoutMs,
      ...(config.storageTimeoutMs ? { storageTimeoutMs: config.storageTimeoutMs } : {}),
    },
  });
  const recovered = runtime.recover();
  if (recovered > 0) log.warn({ turns: recovered }, "marked turns interrupted by the previous shutdown as failed");

  // What the first turn needs (the default provider's SDK and client) loads once the first
  // request (initialize) has been answered: off the start-up path, and usually done before the
  // client's first turn/start; a turn that comes sooner waits for the same load, not a second.
  let preparing = false;
  const prepareFirstTurn = (): void => {
    if (preparing || (config.backend && config.backend.type !== "builtin")) return;
    preparing = true;
    setImmediate(() => {
      tools.specs();
      // Node's fetch (the SDKs' HTTP client) loads its implementation on first use.
      void new Request("http://localhost/");
      providers.prepare().catch((error: unknown) => log.debug({ err: error }, "could not prepare the default provider"));
    });
  };

  const forcedJsonRpc = forced?.open ? forced : undefined;
  const serve = (channel: MessageChannel, face: Face | undefined): void => {
    // The face needs the connection to talk back, and the connection needs the face's
    // handlers; the router is created right after the connection, before any message arrives.
    let router: FaceRouter | undefined;
    const connection = new RpcConnection(
      channel,
      {
        onRequest: (method, params, ctx) => {
          const answer = router?.onRequest(method, params, ctx);
          void Promise.resolve(answer).then(prepareFirstTurn, prepareFirstTurn);
          return answer;
        },
        onNotification: (method, params, ctx) => router?.onNotification(method, params, ctx),
      },
      {
        logger: log,
        maxInFlight: config.maxInFlight,
        ...(config.outputBudgetBytes ? { outputBudgetBytes: config.outputBudgetBytes } : {}),
      },
    );
    router = new FaceRouter(routedFaces(), { runtime, connection, log, serverVersion: VERSION }, refuseBeforeInitialize, face);
  };

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
        isReady: () => true,
        logger: log,
      },
      (channel) => serve(channel, config.faceOnStdioOnly ? undefined : forcedJsonRpc),
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
        store.close();
      } finally {
        // Whatever failed above, the data directory is free again and the process can exit.
        lock.release();
        resolveClosed();
      }
    })());

  // A client that goes away does not kill its turns: with no other listener, the server exits
  // once the running turns have finished.
  const stdioClosed = (): void => {
    if (ws) return;
    runtime
      .idle()
      .then(stop)
      .catch((error: unknown) => log.error({ err: error }, "could not stop cleanly"));
  };
  if (config.stdio && forced?.serveStream) {
    forced
      .serveStream({ runtime, log, serverVersion: VERSION, input: process.stdin, output: process.stdout })
      .catch((error: unknown) => log.error({ err: error, face: forced.name }, "the stdio connection failed"))
      .finally(stdioClosed);
  } else if (config.stdio) {
    const channel = createStdioChannel(process.stdin, process.stdout, { maxMessageBytes: config.maxMessageBytes });
    channel.onClose(stdioClosed);
    serve(channel, forcedJsonRpc);
  }
  log.info({ startupMs: Math.round(performance.now()), version: VERSION }, "ready");
  return { runtime, ...(ws ? { websocketUrl: ws.url } : {}), closed, stop };
}
