// The MCP servers of every workspace in use: their configuration (mcp/list|get|upsert|remove),
// their connections and statuses, and their tools as the engine's tools. A workspace's servers
// start the first time something asks for them (a turn, a status read) and follow its
// configuration when it changes through these methods.
import { z } from "zod";
import { RuntimeError } from "../../domain/errors.js";
import { defineTool, namespacedToolName, type AnyTool } from "../../tools/tool.js";
import { sameName, type ConfigChanges } from "../changes.js";
import { readServers, validated, writeServers, type McpServerConfig } from "./config.js";
import { McpConnection, type McpServerStatus } from "./connection.js";

export interface McpManagerOptions {
  env: NodeJS.ProcessEnv;
  changes: ConfigChanges;
  /** First restart delay of a failed server (default 1 s). */
  restartDelayMs?: number;
}

export type McpTestResult = { success: true; toolCount: number } | { success: false; errorCode: string; errorMessage: string };

/** How long mcp/test waits for a server to start and list its tools. */
const TEST_TIMEOUT_MS = 30_000;

export class McpManager {
  private readonly workspaces = new Map<string, Map<string, McpConnection>>();
  private readonly listeners = new Set<(workspacePath: string, status: McpServerStatus) => void>();

  constructor(private readonly options: McpManagerOptions) {}

  onStatus(listener: (workspacePath: string, status: McpServerStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- configuration ----

  list(workspacePath: string): McpServerConfig[] {
    return readServers(workspacePath);
  }

  get(workspacePath: string, name: string): McpServerConfig {
    const found = readServers(workspacePath).find((s) => sameName(s.name, name));
    if (!found) throw new RuntimeError("mcpServerNotFound", `No MCP server named ${JSON.stringify(name)} in ${workspacePath}`, { name });
    return found;
  }

  /** Creates or replaces a server (matched by name without case) and reconnects it. */
  upsert(workspacePath: string, config: McpServerConfig): McpServerConfig {
    const server = validated(stripWireOnly(config));
    const servers = readServers(workspacePath);
    const index = servers.findIndex((s) => sameName(s.name, server.name));
    if (index >= 0 && servers[index]!.name !== server.name)
      throw new RuntimeError(
        "mcpServerNameConflict",
        `MCP server ${server.name} conflicts with ${servers[index]!.name} (names ignore case).`,
        {
          name: server.name,
        },
      );
    if (index >= 0) servers[index] = server;
    else servers.push(server);
    writeServers(workspacePath, servers);
    this.options.changes.announce(workspacePath, "mcp/upsert", ["mcp"]);
    this.reconcile(workspacePath);
    return server;
  }

  remove(workspacePath: string, name: string): void {
    const server = this.get(workspacePath, name);
    writeServers(
      workspacePath,
      readServers(workspacePath).filter((s) => s !== server && !sameName(s.name, name)),
    );
    this.options.changes.announce(workspacePath, "mcp/remove", ["mcp"]);
    this.reconcile(workspacePath);
  }

  // ---- runtime ----

  statuses(workspacePath: string): McpServerStatus[] {
    return [...this.connections(workspacePath).values()].map((c) => c.status);
  }

  /** The ready servers' tools, as tools of the engine (namespaced mcp__<server>__<tool>, approved like shell commands). */
  tools(workspacePath: string): AnyTool[] {
    return [...this.connections(workspacePath).values()]
      .filter((c) => c.status.startupState === "ready")
      .flatMap((c) => c.tools.map((tool) => mcpTool(c, tool.name, tool.description, tool.inputSchema)));
  }

  /** Connects to a configuration without saving it, lists its tools, and disconnects. */
  async test(workspacePath: string, config: McpServerConfig): Promise<McpTestResult> {
    const server = { ...validated(stripWireOnly(config)), enabled: true };
    const result = await new Promise<McpTestResult>((resolve) => {
      const timer = setTimeout(
        () => resolve({ success: false, errorCode: "McpServerTestFailed", errorMessage: "timed out starting" }),
        (server.startupTimeoutSec ?? 0) * 1000 || TEST_TIMEOUT_MS,
      );
      const probe = new McpConnection(server, {
        workspacePath,
        env: this.options.env,
        restartDelayMs: 60_000,
        onStatus: (status) => {
          if (status.startupState === "ready") resolve({ success: true, toolCount: status.toolCount });
          else if (status.startupState === "failed")
            resolve({ success: false, errorCode: "McpServerTestFailed", errorMessage: status.lastError ?? "failed" });
          else return;
          clearTimeout(timer);
          void probe.stop();
        },
      });
      probe.start();
    });
    return result;
  }

  async close(): Promise<void> {
    const all = [...this.workspaces.values()].flatMap((servers) => [...servers.values()]);
    this.workspaces.clear();
    await Promise.all(all.map((c) => c.stop()));
  }

  /** The workspace's connections, started on first use. */
  private connections(workspacePath: string): Map<string, McpConnection> {
    let servers = this.workspaces.get(workspacePath);
    if (!servers) {
      servers = new Map();
      this.workspaces.set(workspacePath, servers);
      for (const config of readServers(workspacePath)) this.open(workspacePath, servers, config);
    }
    return servers;
  }

  /** Stops removed and changed servers, starts new and changed ones (all of them, the first time). */
  private reconcile(workspacePath: string): void {
    const servers = this.workspaces.get(workspacePath);
    if (!servers) {
      this.connections(workspacePath);
      return;
    }
    const configs = readServers(workspacePath);
    for (const [key, connection] of servers) {
      const config = configs.find((c) => sameName(c.name, key));
      if (config && JSON.stringify(config) === JSON.stringify(connection.config)) continue;
      servers.delete(key);
      void connection.stop();
    }
    for (const config of configs) if (!servers.has(config.name.toLowerCase())) this.open(workspacePath, servers, config);
  }

  private open(workspacePath: string, servers: Map<string, McpConnection>, config: McpServerConfig): void {
    const connection = new McpConnection(config, {
      workspacePath,
      env: this.options.env,
      restartDelayMs: this.options.restartDelayMs ?? 1000,
      onStatus: (status) => {
        // A replaced connection's last words (stopped) are not news.
        if (servers.get(config.name.toLowerCase()) !== connection) return;
        for (const listener of this.listeners) listener(workspacePath, status);
      },
    });
    servers.set(config.name.toLowerCase(), connection);
    connection.start();
    if (!config.enabled) for (const listener of this.listeners) listener(workspacePath, connection.status);
  }
}

/** The wire's read-only decorations (origin, readOnly) are not configuration. */
function stripWireOnly(config: McpServerConfig & { origin?: unknown; readOnly?: unknown }): McpServerConfig {
  const { origin: _origin, readOnly: _readOnly, ...rest } = config;
  return rest;
}

function mcpTool(connection: McpConnection, name: string, description: string | undefined, inputSchema: Record<string, unknown>): AnyTool {
  const server = connection.config.name;
  return defineTool({
    name: namespacedToolName("mcp", server, name),
    description: `${description ?? name} (tool ${name} of MCP server ${server})`,
    // Not read-only: an MCP tool may change anything, so plan mode leaves it out.
    kind: "write",
    // The server checks its own arguments; the model is given its schema as it is.
    input: z.record(z.string(), z.unknown()),
    parameters: inputSchema,
    mcpServer: server,
    approval: (input) => ({
      approvalType: "shell",
      operation: `${server}: ${name} ${JSON.stringify(input).slice(0, 500)}`,
      target: server,
      scopeKey: `mcp:${server}:${name}`,
      reason: `The agent wants to call tool ${name} of MCP server ${server}.`,
    }),
    execute: async (input, ctx) => connection.callTool(name, input, ctx.signal),
  });
}
