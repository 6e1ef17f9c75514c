// Structured logging to stderr; stdout is reserved for protocol messages. pino writes the lines,
// and is loaded for the first line that passes the level rather than at start-up, and off the
// path of a starting server's first answers (docs/performance.md).
import { createRequire } from "node:module";
import type { Logger as PinoLogger } from "pino";

type LogFn = { (bindings: object, message?: string): void; (message: string): void };

/** The logging calls Switchyard makes (pino's, by a subset). */
export interface Logger {
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
type Method = Exclude<LogLevel, "silent">;

const RANK: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/**
 * In the bundle, `require("pino")` is esbuild's: pino is bundled and evaluated on first call. In
 * the unbundled build (tests) there is no `require` in an ES module, so Node's resolves it.
 */
function loadPino(): typeof import("pino") {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above: this one is the bundler's
  return typeof require === "function" ? (require("pino") as typeof import("pino")) : createRequire(import.meta.url)("pino");
}

/**
 * Lines below warn that come before pino has loaded are written at the loop's next turn (or at
 * exit), where pino loads: its first load (~6 ms) came before a starting server's first answers,
 * whose "ready" and "client initialized" lines are info. A warning or an error loads pino at once,
 * after the lines waiting, so the order holds; a line waits a few milliseconds at most.
 */
const WRITTEN_AT_ONCE = RANK.warn;

export function createLogger(level: LogLevel = "info"): Logger {
  let root: PinoLogger | undefined;
  const waiting: Array<() => void> = [];
  const load = (): PinoLogger => {
    if (!root) {
      const { pino } = loadPino();
      root = pino({ level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: true }));
      process.removeListener("exit", load);
      for (const line of waiting.splice(0)) line();
    }
    return root;
  };
  const write = (rank: number, line: () => void): void => {
    if (root || rank >= WRITTEN_AT_ONCE) {
      load();
      return line();
    }
    if (waiting.length === 0) {
      setImmediate(load).unref();
      process.once("exit", load);
    }
    waiting.push(line);
  };
  return filtered(load, write, RANK[level]);
}

/** A logger whose calls below `threshold` cost nothing and load nothing. */
function filtered(target: () => PinoLogger, write: (rank: number, line: () => void) => void, threshold: number): Logger {
  const method = (name: Method): LogFn =>
    RANK[name] < threshold
      ? () => {}
      : (first: object | string, message?: string) =>
          write(RANK[name], () => (message === undefined ? target()[name](first as object) : target()[name](first as object, message)));
  return {
    fatal: method("fatal"),
    error: method("error"),
    warn: method("warn"),
    info: method("info"),
    debug: method("debug"),
    trace: method("trace"),
    child: (bindings) => {
      let child: PinoLogger | undefined;
      return filtered(() => (child ??= target().child(bindings)), write, threshold);
    },
  };
}

/** A logger that drops everything, for library use and tests. */
export const silentLogger: Logger = createLogger("silent");
