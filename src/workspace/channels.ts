// External channel configurations (externalChannel/*): a workspace's are `externalChannels` in
// its `.craft/config.json`, in the AppServer document's shape (subprocess, websocket and
// managedWebsocket adapters, which are started by others), plus Switchyard's own `webhook`
// channel, which the server runs itself (see automation/webhook-channel.ts).
import { RuntimeError } from "../domain/errors.js";
import { RESOURCE_NAME, sameName, type ConfigChanges } from "./changes.js";
import { readSettings, updateSettings } from "./settings.js";

export interface ExternalChannelConfig {
  name: string;
  enabled: boolean;
  transport: "subprocess" | "websocket" | "managedWebsocket" | "webhook";
  command?: string;
  builtinModule?: string;
  args?: string[];
  workingDirectory?: string | null;
  env?: Record<string, string>;
  /** webhook: the loopback port its messages come in on. */
  port?: number;
  /** webhook: where the agent's replies are POSTed. */
  outboundUrl?: string;
  /** webhook: the variable holding the bearer token incoming messages must carry. */
  secretEnvVar?: string | null;
}

/** Names of the channels Switchyard's own faces use; a configuration may not take them. */
const RESERVED = ["appserver", "claude", "acp", "agentcompany", "agentcraft", "yeaft", "heartbeat", "subagent", "cron"];
const PROCESS_FIELDS = ["command", "builtinModule", "args", "workingDirectory", "env"] as const;
const WEBHOOK_FIELDS = ["port", "outboundUrl", "secretEnvVar"] as const;

export function channelProblems(config: ExternalChannelConfig): string[] {
  const problems: string[] = [];
  const has = (key: keyof ExternalChannelConfig): boolean => config[key] !== undefined && config[key] !== null;
  if (!RESOURCE_NAME.test(config.name)) problems.push(`name "${config.name}" must be letters, digits, ".", "_" or "-"`);
  const launches = config.transport === "subprocess" || config.transport === "managedWebsocket";
  if (launches && !has("command") && !has("builtinModule"))
    problems.push(`a ${config.transport} channel needs a command or a builtinModule`);
  if (!launches)
    for (const key of PROCESS_FIELDS) if (has(key)) problems.push(`${key} is not allowed for the ${config.transport} transport`);
  if (config.transport === "webhook") {
    if (!Number.isInteger(config.port) || config.port! <= 0 || config.port! > 65535)
      problems.push("a webhook channel needs a port (1-65535)");
    if (!config.outboundUrl || !/^https?:\/\//.test(config.outboundUrl)) problems.push("a webhook channel needs an http(s) outboundUrl");
  } else for (const key of WEBHOOK_FIELDS) if (has(key)) problems.push(`${key} is only for the webhook transport`);
  return problems;
}

export class ExternalChannels {
  constructor(private readonly changes: ConfigChanges) {}

  list(workspacePath: string): ExternalChannelConfig[] {
    const channels = readSettings(workspacePath).externalChannels;
    return Array.isArray(channels)
      ? channels.filter(
          (c): c is ExternalChannelConfig => !!c && typeof c === "object" && typeof (c as ExternalChannelConfig).name === "string",
        )
      : [];
  }

  get(workspacePath: string, name: string): ExternalChannelConfig {
    const found = this.list(workspacePath).find((c) => sameName(c.name, name));
    if (!found)
      throw new RuntimeError("channelNotFound", `No external channel named ${JSON.stringify(name)} in ${workspacePath}`, { name });
    return found;
  }

  upsert(workspacePath: string, config: ExternalChannelConfig): ExternalChannelConfig {
    const problems = channelProblems(config);
    if (problems.length > 0)
      throw new RuntimeError("channelValidationFailed", `External channel ${config.name}: ${problems.join("; ")}`, { problems });
    const channels = this.list(workspacePath);
    const clash =
      RESERVED.find((name) => sameName(name, config.name)) ??
      channels.find((c) => sameName(c.name, config.name) && c.name !== config.name)?.name;
    if (clash)
      throw new RuntimeError("channelNameConflict", `External channel ${config.name} conflicts with ${clash} (names ignore case).`);
    const index = channels.findIndex((c) => c.name === config.name);
    if (index >= 0) channels[index] = config;
    else channels.push(config);
    this.write(workspacePath, channels, "externalChannel/upsert");
    return config;
  }

  remove(workspacePath: string, name: string): void {
    const found = this.get(workspacePath, name);
    this.write(
      workspacePath,
      this.list(workspacePath).filter((c) => c.name !== found.name),
      "externalChannel/remove",
    );
  }

  private write(workspacePath: string, channels: ExternalChannelConfig[], source: string): void {
    updateSettings(workspacePath, (settings) => {
      settings.externalChannels = channels;
    });
    this.changes.announce(workspacePath, source, ["externalChannel"]);
  }
}
