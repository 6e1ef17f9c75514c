// Switchyard's own external channel adapter, which needs nothing but HTTP: a bot or bridge POSTs
// a chat's message to the channel's loopback port, the message becomes a turn on that chat's
// thread (made on the first message: originChannel = the channel, channelContext = the chat),
// and the agent's reply is POSTed to the channel's outboundUrl. The server runs the webhook
// channels of its own workspace and follows their configuration.
//
//   in:  POST http://127.0.0.1:<port>/  {chatId, text, userId?}   (Authorization: Bearer <secret>)
//        -> 202 {threadId}
//   out: POST <outboundUrl>  {channel, chatId, threadId, turnId, text, error}
import http from "node:http";
import { bearerToken, sameSecret } from "../bearer.js";
import type { Logger } from "../log.js";
import type { RuntimeApi } from "../runtime/api.js";
import type { ExternalChannelConfig, ExternalChannels } from "../workspace/channels.js";
import type { ConfigChanges } from "../workspace/changes.js";
import { runPrompt } from "./run-prompt.js";

type Runtime = Pick<RuntimeApi, "subscribe" | "startTurn" | "listThreads" | "startThread">;

export class WebhookChannels {
  private readonly running = new Map<string, { config: ExternalChannelConfig; server: http.Server }>();
  private stopChanges: (() => void) | undefined;

  constructor(
    private readonly runtime: Runtime,
    private readonly channels: ExternalChannels,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
  ) {}

  /** Runs the workspace's enabled webhook channels, and follows changes of their configuration. */
  start(workspacePath: string, changes: ConfigChanges): void {
    this.stopChanges = changes.on((change) => {
      if (change.workspacePath === workspacePath && change.regions.includes("externalChannel")) void this.reconcile(workspacePath);
    });
    void this.reconcile(workspacePath);
  }

  async close(): Promise<void> {
    this.stopChanges?.();
    await Promise.all([...this.running.keys()].map((name) => this.stop(name)));
  }

  private async reconcile(workspacePath: string): Promise<void> {
    let wanted: ExternalChannelConfig[];
    try {
      wanted = this.channels.list(workspacePath).filter((c) => c.transport === "webhook" && c.enabled);
    } catch (error) {
      this.log.warn({ err: error }, "external channels unreadable");
      return;
    }
    for (const [name, { config }] of this.running)
      if (JSON.stringify(wanted.find((c) => c.name === name)) !== JSON.stringify(config)) await this.stop(name);
    for (const config of wanted) if (!this.running.has(config.name)) this.listen(workspacePath, config);
  }

  private listen(workspacePath: string, config: ExternalChannelConfig): void {
    const secret = config.secretEnvVar ? this.env[config.secretEnvVar] : undefined;
    const server = http.createServer((req, res) => {
      this.receive(workspacePath, config, secret, req, res).catch((error: unknown) => {
        this.log.error({ err: error, channel: config.name }, "webhook message failed");
        if (!res.headersSent) reply(res, 500, { error: "internal error" });
      });
    });
    server.on("error", (error) => this.log.error({ err: error, channel: config.name, port: config.port }, "webhook channel cannot listen"));
    server.listen(config.port, "127.0.0.1", () => this.log.info({ channel: config.name, port: config.port }, "webhook channel listening"));
    this.running.set(config.name, { config, server });
  }

  private async stop(name: string): Promise<void> {
    const entry = this.running.get(name);
    this.running.delete(name);
    if (!entry) return;
    await new Promise<void>((resolve) => {
      entry.server.closeAllConnections();
      entry.server.close(() => resolve());
    });
    this.log.info({ channel: name }, "webhook channel stopped");
  }

  private async receive(
    workspacePath: string,
    config: ExternalChannelConfig,
    secret: string | undefined,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    if (req.method !== "POST") return reply(res, 405, { error: "POST a message: {chatId, text, userId?}" });
    const given = bearerToken(req.headers.authorization);
    if (secret !== undefined && !(given && sameSecret(given, secret))) return reply(res, 401, { error: "Missing or invalid token." });
    let message: { chatId?: unknown; text?: unknown; userId?: unknown };
    try {
      message = JSON.parse(await readBody(req)) as typeof message;
    } catch {
      return reply(res, 400, { error: "The body must be JSON: {chatId, text, userId?}." });
    }
    if (typeof message.chatId !== "string" || !message.chatId || typeof message.text !== "string" || !message.text)
      return reply(res, 400, { error: "chatId and text are required strings." });
    const threadId = this.threadFor(
      workspacePath,
      config.name,
      message.chatId,
      typeof message.userId === "string" ? message.userId : undefined,
    );
    reply(res, 202, { threadId });
    const outcome = await runPrompt(this.runtime, threadId, message.text);
    await fetch(config.outboundUrl!, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        channel: config.name,
        chatId: message.chatId,
        threadId,
        turnId: outcome.turnId,
        text: outcome.text,
        error: outcome.error,
      }),
    }).catch((error: unknown) => this.log.warn({ err: error, channel: config.name }, "webhook reply not delivered"));
  }

  /** The chat's thread: the one made by its first message, else a new one. */
  private threadFor(workspacePath: string, channel: string, chatId: string, userId: string | undefined): string {
    const [existing] = this.runtime.listThreads(
      { originChannel: channel, channelContext: chatId, workspacePath, hideArchived: true },
      { limit: 1 },
    ).threads;
    return (
      existing?.id ??
      this.runtime.startThread({
        workspacePath,
        originChannel: channel,
        channelContext: chatId,
        ...(userId ? { userId } : {}),
        displayName: `${channel} ${chatId}`,
      }).id
    );
  }
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 1024 * 1024) throw new Error("The message is too large.");
  }
  return text;
}
