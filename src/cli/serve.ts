// Runs a server in the foreground until it stops (stdio closed, a signal, or a face's own
// shutdown request): shared by every command that serves.
import { createLogger, LOG_LEVELS, type LogLevel } from "../log.js";
import { startServer, type ServerConfig } from "../server.js";
import { resolveAcpConfig, resolveServerConfig, type AcpFlags, type AppServerFlags } from "./config.js";

/** `switchyard app-server`. */
export const serveAppServer = (flags: AppServerFlags & { dialect?: string }): Promise<void> =>
  serve(flags, () => resolveServerConfig({ ...flags, face: flags.face ?? flags.dialect }, process.env));

/** `switchyard acp`. */
export const serveAcp = (flags: AcpFlags): Promise<void> => serve(flags, () => resolveAcpConfig(flags, process.env));

/** Starts a server and runs until it stops (stdio closed, or a signal). */
export async function serve(flags: { logLevel?: string }, resolve: () => ServerConfig | Promise<ServerConfig>): Promise<void> {
  const level = (flags.logLevel ?? process.env.SWITCHYARD_LOG_LEVEL ?? "info") as LogLevel;
  const log = createLogger(LOG_LEVELS.includes(level) ? level : "info");
  const server = await startServer(await resolve(), log);
  const stop = (signal: string): void => {
    log.info({ signal }, "shutting down");
    server.stop().catch((error: unknown) => log.error({ err: error }, "could not stop cleanly"));
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  await server.closed;
  log.info("stopped");
  process.exit(0);
}
