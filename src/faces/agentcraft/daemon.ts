// The AgentCraft daemon's listener: the Unix socket (owner-only; a dead daemon's socket is
// recovered, a live one is not taken), daemon.pid, and the services every connection shares.
import { rmSync, writeFileSync } from "node:fs";
import { RpcConnection } from "../../rpc/connection.js";
import { listenUnixSocket } from "../../transport/unix-socket.js";
import type { FaceListener, ListenContext } from "../face.js";
import { AGENTCRAFT_CODES } from "./errors.js";
import { openConnection } from "./session.js";
import { Catalog, type AgentCraftPaths } from "./home.js";
import { LeaseRegistry } from "./leases.js";
import { AgentManager } from "./manager.js";

export interface DaemonOptions {
  paths: AgentCraftPaths;
  /** How often agent processes are checked for liveness (default 5 s). */
  watchIntervalMs?: number;
  maxMessageBytes?: number;
}

export async function startDaemon(ctx: ListenContext): Promise<FaceListener> {
  const opts = ctx.options as unknown as DaemonOptions;
  const { paths } = opts;
  const log = ctx.log.child({ face: "agentcraft" });
  const catalog = new Catalog(paths.configs, log);
  catalog.load();
  const manager = new AgentManager(ctx.runtime, catalog, paths, log, { watchIntervalMs: opts.watchIntervalMs ?? 5_000 });
  const leases = new LeaseRegistry(ctx.runtime, manager, log);
  const services = { manager, leases, version: ctx.serverVersion, log, shutdown: ctx.requestStop };

  const socket = await listenUnixSocket(
    paths.socket,
    (channel) => {
      let handlers: ReturnType<typeof openConnection> | undefined;
      const connection = new RpcConnection(
        channel,
        { onRequest: (method, params, requestCtx) => handlers!.onRequest(method, params, requestCtx) },
        { logger: log, maxInFlight: 64 },
      );
      connection.useErrorCodes({ overloaded: AGENTCRAFT_CODES.OVERLOADED });
      handlers = openConnection(connection, services);
    },
    { maxMessageBytes: opts.maxMessageBytes ?? 16 * 1024 * 1024 },
  );
  writeFileSync(paths.pidFile, `${process.pid}\n`, { mode: 0o600 });
  await manager.reconcile();
  log.info({ socket: paths.socket, home: paths.home }, "agentcraft daemon listening");

  return {
    url: `unix://${paths.socket}`,
    close: async () => {
      leases.dispose();
      await manager.shutdown();
      await socket.close();
      rmSync(paths.pidFile, { force: true });
    },
  };
}
