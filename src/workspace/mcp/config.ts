// MCP server configurations: a workspace's are `mcp.servers` in its `.craft/config.json`, in the
// AppServer document's shape (stdio: command, args, env, envVars, cwd; streamableHttp: url,
// bearerTokenEnvVar, httpHeaders, envHttpHeaders).
import { RuntimeError } from "../../domain/errors.js";
import { RESOURCE_NAME } from "../changes.js";
import { readSettings, section, updateSettings } from "../settings.js";

export interface McpServerConfig {
  name: string;
  enabled: boolean;
  transport: "stdio" | "streamableHttp";
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Variables passed on from the server's own environment. */
  envVars?: string[];
  cwd?: string | null;
  url?: string;
  /** The variable holding a bearer token for the Authorization header. */
  bearerTokenEnvVar?: string | null;
  httpHeaders?: Record<string, string>;
  /** Header name -> the variable holding its value. */
  envHttpHeaders?: Record<string, string>;
  startupTimeoutSec?: number | null;
  toolTimeoutSec?: number | null;
}

const STDIO_FIELDS = new Set(["command", "args", "env", "envVars", "cwd"]);
const HTTP_FIELDS = new Set(["url", "bearerTokenEnvVar", "httpHeaders", "envHttpHeaders"]);
const COMMON_FIELDS = new Set(["name", "enabled", "transport", "startupTimeoutSec", "toolTimeoutSec", "origin", "readOnly"]);

/** What is wrong with a configuration, in words; empty when it is valid. */
export function configProblems(config: McpServerConfig): string[] {
  const problems: string[] = [];
  if (!RESOURCE_NAME.test(config.name)) problems.push(`name "${config.name}" must be letters, digits, ".", "_" or "-"`);
  const allowed = config.transport === "stdio" ? STDIO_FIELDS : HTTP_FIELDS;
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined || value === null || COMMON_FIELDS.has(key) || allowed.has(key)) continue;
    problems.push(`${key} is not allowed for the ${config.transport} transport`);
  }
  if (config.transport === "stdio" && !config.command) problems.push("a stdio server needs a command");
  if (config.transport === "streamableHttp") {
    if (!config.url) problems.push("a streamableHttp server needs a url");
    else if (!/^https?:\/\//.test(config.url)) problems.push(`url "${config.url}" is not http(s)`);
  }
  return problems;
}

export function validated(config: McpServerConfig): McpServerConfig {
  const problems = configProblems(config);
  if (problems.length > 0) throw new RuntimeError("mcpValidationFailed", `MCP server ${config.name}: ${problems.join("; ")}`, { problems });
  return config;
}

/** The workspace's MCP servers, as configured (entries that are not objects are skipped). */
export function readServers(workspacePath: string): McpServerConfig[] {
  const servers = (readSettings(workspacePath).mcp as { servers?: unknown } | undefined)?.servers;
  return Array.isArray(servers)
    ? servers.filter((s): s is McpServerConfig => !!s && typeof s === "object" && typeof (s as McpServerConfig).name === "string")
    : [];
}

/** Replaces the servers list in .craft/config.json. */
export function writeServers(workspacePath: string, servers: McpServerConfig[]): void {
  updateSettings(workspacePath, (settings) => {
    section(settings, "mcp").servers = servers;
  });
}
