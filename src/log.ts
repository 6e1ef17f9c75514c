// Structured logging to stderr; stdout is reserved for protocol messages.
import { pino, type Logger } from "pino";

export type { Logger };

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(level: LogLevel = "info"): Logger {
  return pino({ level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: true }));
}

/** A logger that drops everything, for library use and tests. */
export const silentLogger: Logger = pino({ level: "silent" });
