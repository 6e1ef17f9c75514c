// Turns command-line flags and environment variables into a server configuration.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ServerConfig } from "../server.js";

export interface AppServerFlags {
  listen: string[];
  /** claude-app-server compatible spelling: `--transport ws --port 3284`. */
  transport?: "stdio" | "ws";
  port?: number;
  dialect?: string;
  dataDir?: string;
  provider?: string;
  model?: string;
  token?: string;
  tokenFile?: string;
  allowOrigin?: string[];
  allowHost?: string[];
  maxMessageBytes: number;
  maxInFlight: number;
  approvalTimeoutMs: number;
  commandTimeoutMs: number;
  pingIntervalMs: number;
  logLevel?: string;
}

export class ConfigError extends Error {}

export function defaultDataDir(env: NodeJS.ProcessEnv): string {
  return env.SWITCHYARD_HOME || path.join(os.homedir(), ".switchyard");
}

export function resolveServerConfig(flags: AppServerFlags, env: NodeJS.ProcessEnv): ServerConfig {
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
    websocket = parsed;
  }
  return {
    dataDir: path.resolve(flags.dataDir ?? defaultDataDir(env)),
    ...(flags.dialect ? { dialect: flags.dialect } : {}),
    stdio,
    ...(websocket ? { websocket } : {}),
    ...withToken(flags, env),
    allowedOrigins: flags.allowOrigin ?? [],
    allowedHosts: flags.allowHost ?? [],
    maxMessageBytes: flags.maxMessageBytes,
    maxInFlight: flags.maxInFlight,
    pingIntervalMs: flags.pingIntervalMs,
    ...(flags.provider ? { provider: flags.provider } : {}),
    ...(flags.model ? { model: flags.model } : {}),
    approvalTimeoutMs: flags.approvalTimeoutMs,
    commandTimeoutMs: flags.commandTimeoutMs,
    env,
  };
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
