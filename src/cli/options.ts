// The serving commands' options, declared once as data. The commander program (program.ts) is
// built from these tables; the commands editors and clients spawn per window (`app-server`, `acp`)
// are also parsed from them by Node's own `util.parseArgs`, so that a start does not load
// commander (~5 ms of every start). Whatever that parser does not take as is (help, an error, a
// value to explain) goes to commander, which explains.
import { parseArgs } from "node:util";
import { LOG_LEVELS } from "../log.js";

export interface OptionSpec {
  /** The long flag without its dashes, e.g. "data-dir"; the flags object has it camel-cased. */
  flag: string;
  /** The value's placeholder in help, e.g. "dir"; none for a switch (true when given). */
  value?: string;
  description: string;
  /** Given more than once, the values are collected in a list. */
  repeatable?: boolean;
  choices?: readonly string[];
  /** Converts the text; throws an Error whose message says what was expected. */
  parse?: (text: string) => unknown;
  default?: unknown;
  /** Accepted but not listed in help (an alias). */
  hidden?: boolean;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error("expected a positive integer");
  return n;
}

/** Where threads live, which model runs them and how: shared by every command that serves. */
export const RUNTIME_OPTIONS: readonly OptionSpec[] = [
  { flag: "data-dir", value: "dir", description: "where threads are persisted (env SWITCHYARD_HOME, default ~/.switchyard)" },
  {
    flag: "store",
    value: "url",
    description: "keep threads in PostgreSQL (postgres://…) instead of SQLite in the data directory (env SWITCHYARD_DATABASE_URL)",
  },
  {
    flag: "workspace-root",
    value: "dir",
    description: "with --store: run only threads whose workspace is under this directory (repeatable; default: any)",
    repeatable: true,
  },
  {
    flag: "max-running-turns",
    value: "n",
    description: "turns that run at once; more wait, started, until one ends (default: no limit)",
    parse: positiveInt,
  },
  {
    flag: "failover",
    value: "mode",
    description: "with --store: a lost node's running turns are continued by the node that takes them over (default), or fail (ownerLost)",
    choices: ["continue", "fail"],
  },
  {
    flag: "lease-ttl-ms",
    value: "n",
    description: "with --store: how long a node that stopped beating keeps its threads (default 10000)",
    parse: positiveInt,
  },
  {
    flag: "provider",
    value: "name",
    description: "model provider, e.g. openai | openai-chat | anthropic | ollama (env SWITCHYARD_PROVIDER)",
  },
  { flag: "model", value: "name", description: "default model (env SWITCHYARD_MODEL)" },
  // No defaults here: an unset flag falls back to config.json, then to the built-in default.
  { flag: "approval-timeout-ms", value: "n", description: "how long an approval waits for a client (default 300000)", parse: positiveInt },
  { flag: "command-timeout-ms", value: "n", description: "default shell command timeout (default 600000)", parse: positiveInt },
  {
    flag: "backend",
    value: "backend",
    description: "who runs threads that name no backend: builtin | claude-code | codex | acp:<command line> (env SWITCHYARD_BACKEND)",
  },
  {
    flag: "agent-idle-timeout-ms",
    value: "n",
    description: "stop an external agent's process after its thread is idle this long (default 600000)",
    parse: positiveInt,
  },
  { flag: "log-level", value: "level", description: "log level (env SWITCHYARD_LOG_LEVEL)", choices: LOG_LEVELS },
];

/** Liveness of the Yeaft relay's and agent's connections. */
export const HEARTBEAT_OPTIONS: readonly OptionSpec[] = [
  { flag: "ping-interval-ms", value: "n", description: "WebSocket ping interval (default 30000)", parse: positiveInt },
  {
    flag: "dead-after-ms",
    value: "n",
    description: "cut a peer off after this long without a pong or a message (default 180000)",
    parse: positiveInt,
  },
];

/** The WebSocket listener's security and limits. */
export const WEBSOCKET_OPTIONS: readonly OptionSpec[] = [
  { flag: "token", value: "token", description: "WebSocket access token (env SWITCHYARD_TOKEN)" },
  { flag: "token-file", value: "path", description: "read the WebSocket access token from a file" },
  { flag: "allow-origin", value: "origin", description: "browser Origins allowed to connect (default: none)", repeatable: true },
  { flag: "allow-host", value: "host", description: "extra Host header names allowed besides loopback names", repeatable: true },
  { flag: "max-message-bytes", value: "n", description: "largest accepted incoming message", parse: positiveInt, default: 4 * 1024 * 1024 },
  { flag: "max-in-flight", value: "n", description: "concurrent requests per connection before -32001", parse: positiveInt, default: 64 },
  { flag: "ping-interval-ms", value: "n", description: "WebSocket ping interval", parse: positiveInt, default: 30_000 },
  {
    flag: "output-budget-bytes",
    value: "n",
    description: "unsent output a client may have before it is caught up from the event log instead",
    parse: positiveInt,
    default: 1024 * 1024,
  },
  {
    flag: "stall-timeout-ms",
    value: "n",
    description: "close a WebSocket client that reads nothing of its pending output for this long",
    parse: positiveInt,
    default: 60_000,
  },
  {
    flag: "storage-timeout-ms",
    value: "n",
    description: "how long running turns wait for a full data directory to accept writes again before they fail",
    parse: positiveInt,
    default: 60_000,
  },
];

/** `app-server`'s own options, before the runtime's and the WebSocket listener's. */
export const APP_SERVER_OPTIONS: readonly OptionSpec[] = [
  { flag: "listen", value: "url", description: "stdio:// and/or ws://HOST:PORT (repeatable)", repeatable: true, default: ["stdio://"] },
  { flag: "transport", value: "kind", description: "claude-app-server style: stdio or ws (with --port)", choices: ["stdio", "ws"] },
  { flag: "port", value: "n", description: "WebSocket port for --transport ws", parse: positiveInt },
  { flag: "face", value: "face", description: "serve only this face (appserver | claude | codex) instead of choosing at initialize" },
  // The claude-app-server's own word for it.
  { flag: "dialect", value: "face", description: "alias of --face", hidden: true },
  {
    flag: "exit-when-idle-ms",
    value: "n",
    description: "exit after this long with no WebSocket client and no running turn (how the Hub starts servers)",
    parse: positiveInt,
  },
  { flag: "hub", description: "find or start the Hub, ensure this directory's workspace server, and bridge stdio to it" },
];

/** `acp`'s own options. */
export const ACP_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "listen",
    value: "url",
    description: "also listen on ws://HOST:PORT for AppServer clients watching the same runtime",
    repeatable: true,
    default: [],
  },
];

/** `agentcompany server:start`'s own options (it always serves stdio). */
export const AGENTCOMPANY_OPTIONS: readonly OptionSpec[] = [
  {
    flag: "listen",
    value: "url",
    description: "also listen on ws://HOST:PORT for AppServer clients watching the sessions' threads",
    repeatable: true,
    default: [],
  },
];

export const camelCase = (flag: string): string => flag.replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());

/**
 * The flags object commander would give for `args` (camel-cased names, values converted, defaults
 * filled in), or undefined when the arguments need commander: help, a positional, an unknown
 * option, a value that does not convert. Later tables' options of the same name give way to
 * earlier ones, as in commander.
 */
export function parseOptions(tables: ReadonlyArray<readonly OptionSpec[]>, args: readonly string[]): Record<string, unknown> | undefined {
  const specs = new Map<string, OptionSpec>();
  for (const spec of tables.flat()) if (!specs.has(spec.flag)) specs.set(spec.flag, spec);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: Object.fromEntries(
        [...specs.values()].map((spec) => [spec.flag, { type: spec.value ? "string" : "boolean", multiple: spec.repeatable ?? false }]),
      ),
      strict: true,
      allowPositionals: false,
    });
  } catch {
    return undefined;
  }
  const flags: Record<string, unknown> = {};
  for (const spec of specs.values()) {
    const given = parsed.values[spec.flag] as string | string[] | boolean | undefined;
    if (given === undefined) {
      if (spec.default !== undefined) flags[camelCase(spec.flag)] = spec.default;
      continue;
    }
    if (typeof given === "boolean") {
      flags[camelCase(spec.flag)] = given;
      continue;
    }
    const texts = Array.isArray(given) ? given : [given];
    if (spec.choices && texts.some((text) => !spec.choices!.includes(text))) return undefined;
    let values: unknown[];
    try {
      values = texts.map((text) => (spec.parse ? spec.parse(text) : text));
    } catch {
      return undefined;
    }
    // A repeated single-value option keeps its last value, as in commander.
    flags[camelCase(spec.flag)] = spec.repeatable ? values : values.at(-1);
  }
  return flags;
}
