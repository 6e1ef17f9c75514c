// Runs a server in the foreground until it stops (stdio closed, a signal, or a face's own
// shutdown request): shared by every command that serves.
import { createLogger, LOG_LEVELS, type LogLevel } from "../log.js";
import { startServer, type ServerConfig } from "../server.js";
import { hasPassword } from "../store/postgres-url.js";
import { resolveAcpConfig, resolveDataDir, resolveServerConfig, type AcpFlags, type AppServerFlags } from "./config.js";

/** `switchyard app-server` (with --hub: a bridge to the workspace's server, which the Hub runs). */
export async function serveAppServer(flags: AppServerFlags & { dialect?: string; hub?: boolean }): Promise<void> {
  if (!flags.hub) return serve(flags, () => resolveServerConfig({ ...flags, face: flags.face ?? flags.dialect }, process.env));
  const { bridgeThroughHub } = await import("../hub/bridge.js");
  await bridgeThroughHub({
    dataDir: resolveDataDir(flags, process.env),
    cliPath: process.argv[1]!,
    env: process.env,
    workspacePath: process.cwd(),
  });
}

/** `switchyard acp`. */
export const serveAcp = (flags: AcpFlags): Promise<void> => serve(flags, () => resolveAcpConfig(flags, process.env));

/** `switchyard agentcompany server:start` (`ac server:start`): the AgentCompany face on stdio. */
export const serveAgentCompany = (flags: AppServerFlags): Promise<void> =>
  serve(flags, async () => ({
    ...(await resolveServerConfig({ ...flags, listen: ["stdio://", ...flags.listen] }, process.env)),
    face: "agentcompany",
    faceOnStdioOnly: true,
  }));

/** Starts a server and runs until it stops (stdio closed, or a signal). */
export async function serve(
  flags: { logLevel?: string; store?: string },
  resolve: () => ServerConfig | Promise<ServerConfig>,
): Promise<void> {
  const level = (flags.logLevel ?? process.env.SWITCHYARD_LOG_LEVEL ?? "info") as LogLevel;
  const log = createLogger(LOG_LEVELS.includes(level) ? level : "info");
  if (flags.store && hasPassword(flags.store)) {
    log.warn(
      "The database password is on the command line (--store), where any user of this machine can read it (ps). " +
        "Give the URL in SWITCHYARD_DATABASE_URL instead, or the password in ~/.pgpass or PGPASSWORD.",
    );
  }
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
