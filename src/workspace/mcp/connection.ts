// One MCP server, as a client through @modelcontextprotocol/sdk: connect (stdio or Streamable
// HTTP), list its tools, call them; a server that fails to start or goes away is reported and
// restarted with backoff. The SDK loads on the first connection, so a workspace without MCP
// servers never loads it.
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpServerConfig } from "./config.js";

export type McpStartupState = "starting" | "ready" | "failed" | "disabled" | "stopped";

export interface McpServerStatus {
  name: string;
  enabled: boolean;
  startupState: McpStartupState;
  toolCount: number;
  resourceCount: number;
  resourceTemplateCount: number;
  lastError: string | null;
  transport: McpServerConfig["transport"];
  /** Set while failed: when the next attempt is made. */
  nextRetryAt?: string;
}

export interface McpTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export interface McpConnectionOptions {
  workspacePath: string;
  /** The server's own environment (for envVars, bearerTokenEnvVar, envHttpHeaders). */
  env: NodeJS.ProcessEnv;
  /** First restart delay; doubled per failure in a row, up to MAX_RESTART_DELAY_MS. */
  restartDelayMs: number;
  onStatus(status: McpServerStatus): void;
}

const MAX_RESTART_DELAY_MS = 30_000;
const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
const DEFAULT_TOOL_TIMEOUT_MS = 600_000;
/** The tail of a stdio server's stderr kept to explain its failure. */
const STDERR_TAIL = 2048;

export class McpConnection {
  tools: McpTool[] = [];
  private client: Client | undefined;
  private stderrTail = "";
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private current: McpServerStatus;

  constructor(
    readonly config: McpServerConfig,
    private readonly options: McpConnectionOptions,
  ) {
    this.current = {
      name: config.name,
      enabled: config.enabled,
      startupState: config.enabled ? "starting" : "disabled",
      toolCount: 0,
      resourceCount: 0,
      resourceTemplateCount: 0,
      lastError: null,
      transport: config.transport,
    };
  }

  get status(): McpServerStatus {
    return this.current;
  }

  /** Connects in the background; the status reports how it goes. */
  start(): void {
    if (!this.config.enabled || this.stopped) return;
    this.setStatus({ startupState: "starting", lastError: this.current.lastError });
    this.connect().catch((error: unknown) => this.failed(error));
  }

  async callTool(name: string, args: unknown, signal: AbortSignal): Promise<{ output: string; isError: boolean }> {
    const client = this.client;
    if (!client || this.current.startupState !== "ready")
      return { output: `MCP server ${this.config.name} is not ready (${this.current.startupState}).`, isError: true };
    const result = await client.callTool({ name, arguments: (args ?? {}) as Record<string, unknown> }, undefined, {
      signal,
      timeout: (this.config.toolTimeoutSec ?? 0) * 1000 || DEFAULT_TOOL_TIMEOUT_MS,
    });
    const content = Array.isArray(result.content) ? (result.content as Array<{ type: string; text?: string }>) : [];
    const output = content.map((part) => (part.type === "text" ? (part.text ?? "") : `[${part.type} content]`)).join("\n");
    return { output, isError: result.isError === true };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
    this.setStatus({ startupState: "stopped", toolCount: 0 });
  }

  private async connect(): Promise<void> {
    const [{ Client }, transport] = await Promise.all([import("@modelcontextprotocol/sdk/client/index.js"), this.transport()]);
    const client = new Client({ name: "switchyard", version: "1" });
    client.onclose = () => {
      if (this.client !== client || this.stopped) return;
      this.client = undefined;
      this.failed(new Error(`the connection closed${this.stderrNote()}`));
    };
    const timeout = (this.config.startupTimeoutSec ?? 0) * 1000 || DEFAULT_STARTUP_TIMEOUT_MS;
    await client.connect(transport, { timeout });
    const { tools } = await client.listTools(undefined, { timeout });
    if (this.stopped) {
      await client.close();
      return;
    }
    this.client = client;
    this.tools = tools.map((t) => ({
      name: t.name,
      ...(t.description ? { description: t.description } : {}),
      inputSchema: t.inputSchema as Record<string, unknown>,
    }));
    this.failures = 0;
    this.setStatus({ startupState: "ready", toolCount: this.tools.length, lastError: null });
  }

  private async transport() {
    const { config, options } = this;
    if (config.transport === "stdio") {
      const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
      const passed = Object.fromEntries((config.envVars ?? []).flatMap((name) => (options.env[name] ? [[name, options.env[name]]] : [])));
      const transport = new StdioClientTransport({
        command: config.command!,
        args: config.args ?? [],
        env: { ...getDefaultEnvironment(), ...passed, ...config.env },
        cwd: path.resolve(options.workspacePath, config.cwd ?? "."),
        stderr: "pipe",
      });
      transport.stderr?.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_TAIL);
      });
      return transport;
    }
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const headers: Record<string, string> = { ...config.httpHeaders };
    for (const [header, variable] of Object.entries(config.envHttpHeaders ?? {})) {
      const value = options.env[variable];
      if (value) headers[header] = value;
    }
    const token = config.bearerTokenEnvVar ? options.env[config.bearerTokenEnvVar] : undefined;
    if (token) headers.Authorization = `Bearer ${token}`;
    return new StreamableHTTPClientTransport(new URL(config.url!), { requestInit: { headers } });
  }

  /** Reports the failure and tries again later, waiting longer after each failure in a row. */
  private failed(error: unknown): void {
    if (this.stopped) return;
    const client = this.client;
    this.client = undefined;
    void client?.close().catch(() => {});
    const delay = Math.min(this.options.restartDelayMs * 2 ** this.failures, MAX_RESTART_DELAY_MS);
    this.failures += 1;
    this.tools = [];
    const message = error instanceof Error ? error.message : String(error);
    this.setStatus({
      startupState: "failed",
      toolCount: 0,
      lastError: `${message}${message.includes("stderr:") ? "" : this.stderrNote()}`,
      nextRetryAt: new Date(Date.now() + delay).toISOString(),
    });
    this.stderrTail = "";
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.start(), delay);
    this.retryTimer.unref();
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim().split("\n").slice(-3).join(" | ");
    return tail ? ` (stderr: ${tail})` : "";
  }

  private setStatus(change: Partial<McpServerStatus>): void {
    const { nextRetryAt: _dropped, ...rest } = this.current;
    this.current = { ...rest, ...change };
    this.options.onStatus(this.current);
  }
}
