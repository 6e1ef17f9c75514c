// `switchyard hub`: the Hub in the foreground until a signal.
import { createLogger, LOG_LEVELS, type LogLevel } from "../log.js";
import { startHub } from "./hub.js";

export async function runHub(options: { dataDir: string; idleTimeoutMs: number }): Promise<void> {
  const level = (process.env.SWITCHYARD_LOG_LEVEL ?? "info") as LogLevel;
  const log = createLogger(LOG_LEVELS.includes(level) ? level : "info");
  const hub = await startHub({ ...options, cliPath: process.argv[1]!, env: process.env, log });
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await hub.close();
  log.info("hub stopped");
}
