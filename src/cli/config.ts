// Turns command-line flags, environment variables and the configuration file into a server
// configuration. Precedence: flags > environment > config file > built-in defaults.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { displayPath, loadConfigFile, type LoadedConfigFile } from "../config/file.js";
import type { ServerConfig } from "../server.js";
import { parseBackendFlag } from "../domain/backend-spec.js";
import type { BackendSpec } from "../domain/model.js";
import { isPostgresUrl } from "../store/postgres-url.js";

export interface AppServerFlags {
  listen: string[];
  /** claude-app-server compatible spelling: `--transport ws --port 3284`. */
  transport?: "stdio" | "ws";
  port?: number;
  face?: string;
  dataDir?: string;
  /** A PostgreSQL URL for the store; unset: SWITCHYARD_DATABASE_URL, else SQLite in the data directory. */
  store?: string;
  leaseTtlMs?: number;
  workspaceRoot?: string[];
  failover?: "continue" | "fail";
  maxRunningTurns?: number;
  provider?: string;
  model?: string;
  token?: string;
  tokenFile?: string;
  allowOrigin?: string[];
  allowHost?: string[];
  maxMessageBytes: number;
  maxInFlight: number;
  /** No commander default: unset means "ask the config file". */
  approvalTimeoutMs?: number;
  commandTimeoutMs?: number;
  /** `builtin`, `claude-code`, `codex` or `acp:<command line>`. */
  backend?: string;
  agentIdleTimeoutMs?: number;
  pingIntervalMs: number;
  outputBudgetBytes: number;
  stallTimeoutMs: number;
  storageTimeoutMs?: number;
  exitWhenIdleMs?: number;
  logLevel?: string;
}

export class ConfigError extends Error {}

export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60_000;
export const DEFAULT_COMMAND_TIMEOUT_MS = 10 * 60_000;

export function defaultDataDir(env: NodeJS.ProcessEnv): string {
  return env.SWITCHYARD_HOME || path.join(os.homedir(), ".switchyard");
}

export function resolveDataDir(flags: { dataDir?: string }, env: NodeJS.ProcessEnv): string {
  return path.resolve(flags.dataDir ?? defaultDataDir(env));
}

/** A setting's value and where it came from, in words for `switchyard doctor`. */
export interface Chosen {
  value: string;
  source: "flag" | "environment" | "config file";
  /** The flag, variable or file that set it, e.g. "--model" or "SWITCHYARD_MODEL". */
  origin: string;
}

/** The default provider and model, each from the first place that sets it. */
export function chooseProviderAndModel(
  flags: { provider?: string; model?: string },
  env: NodeJS.ProcessEnv,
  file: LoadedConfigFile,
): { provider?: Chosen; model?: Chosen } {
  const pick = (key: "provider" | "model", variable: string): Chosen | undefined => {
    if (flags[key]) return { value: flags[key], source: "flag", origin: `--${key}` };
    if (env[variable]) return { value: env[variable], source: "environment", origin: variable };
    const inFile = file.config[key];
    return inFile ? { value: inFile, source: "config file", origin: displayPath(file.path) } : undefined;
  };
  const provider = pick("provider", "SWITCHYARD_PROVIDER");
  const model = pick("model", "SWITCHYARD_MODEL");
  return { ...(provider ? { provider } : {}), ...(model ? { model } : {}) };
}

/**
 * The PostgreSQL store a server uses (--store, else SWITCHYARD_DATABASE_URL), checked to be
 * PostgreSQL's: never a silent fallback to SQLite. Undefined: SQLite in the data directory.
 */
export function resolveStoreUrl(flags: { store?: string }, env: NodeJS.ProcessEnv): string | undefined {
  const value = flags.store ?? env.SWITCHYARD_DATABASE_URL;
  if (!value) return undefined;
  if (!isPostgresUrl(value)) {
    throw new ConfigError(`--store must be a PostgreSQL URL (postgres://user@host:port/database), not "${value}".`);
  }
  return value;
}

export async function resolveServerConfig(flags: AppServerFlags, env: NodeJS.ProcessEnv): Promise<ServerConfig> {
  const dataDir = resolveDataDir(flags, env);
  const file = await loadConfigFile(dataDir);
  const { provider, model } = chooseProviderAndModel(flags, env, file);
  let stdio = false;
  let websocket: ServerConfig["websocket"];
  const listen = flags.transport === "ws" ? [`ws://127.0.0.1:${flags.port ?? 3284}`] : flags.listen;
  for (const url of listen) {
    if (url === "stdio://" || url === "stdio") {
      stdio = true;
      continue;
    }
    const parsed = parseWsUrl(url);
    if (websocket) throw new ConfigError("Only one ws:// listener is supported.");
    // claude-app-server clients connect to any path of a `--transport ws` server.
    websocket = flags.transport === "ws" || flags.face === "claude" ? { ...parsed, anyPath: true } : parsed;
  }
  const storeUrl = resolveStoreUrl(flags, env);
  return {
    dataDir,
    ...(storeUrl ? { storeUrl } : {}),
    ...(storeUrl && flags.leaseTtlMs ? { leaseTtlMs: flags.leaseTtlMs } : {}),
    ...(flags.failover ? { failover: flags.failover } : {}),
    ...(flags.maxRunningTurns ? { maxRunningTurns: flags.maxRunningTurns } : {}),
    ...(flags.workspaceRoot?.length ? { workspaceRoots: flags.workspaceRoot.map((dir) => path.resolve(dir)) } : {}),
    ...(flags.face ? { face: flags.face } : {}),
    stdio,
    ...(websocket ? { websocket } : {}),
    ...withToken(flags, env),
    allowedOrigins: flags.allowOrigin ?? file.config.allowedOrigins ?? [],
    allowedHosts: flags.allowHost ?? file.config.allowedHosts ?? [],
    maxMessageBytes: flags.maxMessageBytes,
    maxInFlight: flags.maxInFlight,
    pingIntervalMs: flags.pingIntervalMs,
    outputBudgetBytes: flags.outputBudgetBytes,
    stallTimeoutMs: flags.stallTimeoutMs,
    ...(flags.storageTimeoutMs ? { storageTimeoutMs: flags.storageTimeoutMs } : {}),
    ...(flags.exitWhenIdleMs ? { exitWhenIdleMs: flags.exitWhenIdleMs } : {}),
    ...(provider ? { provider: provider.value } : {}),
    ...(model ? { model: model.value } : {}),
    ...(file.config.providers ? { providerSettings: file.config.providers } : {}),
    approvalTimeoutMs: flags.approvalTimeoutMs ?? file.config.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    commandTimeoutMs: flags.commandTimeoutMs ?? file.config.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    ...withBackend(flags, env, file),
    env,
  };
}

/** `switchyard acp`'s flags: app-server's, where --listen adds ws:// listeners to the ACP stdio. */
export type AcpFlags = Omit<AppServerFlags, "transport" | "port" | "face">;

/**
 * The configuration of `switchyard acp`: resolved exactly as app-server's, with stdio speaking
 * ACP. `--listen` may only add a ws:// listener (for AppServer clients watching the same runtime).
 */
export async function resolveAcpConfig(flags: AcpFlags, env: NodeJS.ProcessEnv): Promise<ServerConfig> {
  const extra = flags.listen.filter((url) => url !== "stdio://" && url !== "stdio");
  for (const url of extra) {
    if (!url.startsWith("ws://"))
      throw new ConfigError(`switchyard acp serves ACP on stdio; --listen only adds ws://HOST:PORT listeners (got "${url}").`);
  }
  return { ...(await resolveServerConfig({ ...flags, listen: ["stdio://", ...extra] }, env)), face: "acp" };
}

/** The default backend: --backend, then SWITCHYARD_BACKEND, then the config file. */
function withBackend(
  flags: AppServerFlags,
  env: NodeJS.ProcessEnv,
  file: LoadedConfigFile,
): Pick<ServerConfig, "backend" | "agentIdleTimeoutMs"> {
  const flag = flags.backend ?? env.SWITCHYARD_BACKEND;
  let backend: BackendSpec | undefined;
  try {
    backend = flag ? parseBackendFlag(flag) : file.config.backend;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const idle = flags.agentIdleTimeoutMs ?? file.config.agentIdleTimeoutMs;
  return { ...(backend ? { backend } : {}), ...(idle ? { agentIdleTimeoutMs: idle } : {}) };
}

function parseWsUrl(url: string): { host: string; port: number } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`Invalid --listen URL "${url}": use stdio:// or ws://HOST:PORT.`);
  }
  if (parsed.protocol !== "ws:") throw new ConfigError(`Unsupported --listen URL "${url}": use stdio:// or ws://HOST:PORT.`);
  if (!parsed.port) throw new ConfigError(`--listen ${url} needs a port (0 picks a free one).`);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(parsed.port) };
}

function withToken(flags: AppServerFlags, env: NodeJS.ProcessEnv): { token?: string } {
  if (flags.tokenFile) {
    let token: string;
    try {
      token = fs.readFileSync(flags.tokenFile, "utf8").trim();
    } catch (error) {
      throw new ConfigError(`Cannot read --token-file ${flags.tokenFile}: ${(error as Error).message}`);
    }
    if (!token) throw new ConfigError(`--token-file ${flags.tokenFile} is empty.`);
    return { token };
  }
  const token = flags.token ?? env.SWITCHYARD_TOKEN;
  return token ? { token } : {};
}
