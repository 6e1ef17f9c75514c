// External channels the server runs itself: each enabled channel of the server's workspace whose
// transport has an adapter here is started, and follows its configuration. An adapter only
// moves messages (in from its transport, replies out); the runner turns a chat's message into a
// turn on the chat's thread, made on its first message (originChannel = the channel,
// channelContext = the chat), after the running turn if there is one.
import type { Logger } from "../log.js";
import type { RuntimeApi } from "../runtime/api.js";
import type { ExternalChannelConfig, ExternalChannels } from "../workspace/channels.js";
import type { ConfigChanges } from "../workspace/changes.js";
import { channelThread, runPrompt, type PromptOutcome } from "./run-prompt.js";
import { webhookAdapter } from "./webhook-channel.js";

export interface ChatMessage {
  chatId: string;
  text: string;
  userId?: string;
}

/** What an adapter gets for one channel. */
export interface ChannelContext {
  config: ExternalChannelConfig;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** Takes a chat's message: its thread at once, the agent's answer when the turn has ended. */
  receive(message: ChatMessage): Promise<{ threadId: string; reply: Promise<PromptOutcome> }>;
}

/** Moves one transport's messages; start resolves with the channel's stop. */
export interface ChannelAdapter {
  readonly transport: ExternalChannelConfig["transport"];
  start(channel: ChannelContext): Promise<() => Promise<void>>;
}

const ADAPTERS: ChannelAdapter[] = [webhookAdapter];

type Runtime = Pick<RuntimeApi, "subscribe" | "startTurn" | "listThreads" | "startThread">;

export class ChannelRunner {
  private readonly running = new Map<string, { config: ExternalChannelConfig; stop: Promise<() => Promise<void>> }>();
  private stopChanges: (() => void) | undefined;

  constructor(
    private readonly runtime: Runtime,
    private readonly channels: ExternalChannels,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
  ) {}

  /** Runs the workspace's enabled channels that have an adapter, and follows their configuration. */
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
      wanted = this.channels.list(workspacePath).filter((c) => c.enabled && ADAPTERS.some((a) => a.transport === c.transport));
    } catch (error) {
      this.log.warn({ err: error }, "external channels unreadable");
      return;
    }
    for (const [name, { config }] of this.running)
      if (JSON.stringify(wanted.find((c) => c.name === name)) !== JSON.stringify(config)) await this.stop(name);
    for (const config of wanted) {
      if (this.running.has(config.name)) continue;
      const adapter = ADAPTERS.find((a) => a.transport === config.transport)!;
      const log = this.log.child({ channel: config.name });
      const stop = adapter.start({ config, env: this.env, log, receive: (message) => this.receive(workspacePath, config.name, message) });
      stop.catch((error: unknown) => log.error({ err: error }, "channel could not start"));
      this.running.set(config.name, { config, stop });
    }
  }

  private async stop(name: string): Promise<void> {
    const entry = this.running.get(name);
    this.running.delete(name);
    if (!entry) return;
    const stop = await entry.stop.catch(() => undefined);
    await stop?.();
    this.log.info({ channel: name }, "channel stopped");
  }

  private async receive(
    workspacePath: string,
    channel: string,
    message: ChatMessage,
  ): Promise<{ threadId: string; reply: Promise<PromptOutcome> }> {
    const threadId = await channelThread(this.runtime, {
      workspacePath,
      originChannel: channel,
      channelContext: message.chatId,
      ...(message.userId ? { userId: message.userId } : {}),
      displayName: `${channel} ${message.chatId}`,
    });
    return { threadId, reply: runPrompt(this.runtime, threadId, message.text) };
  }
}
