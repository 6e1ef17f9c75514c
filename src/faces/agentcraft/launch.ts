// How an instance's agent is started: the ACP command line a client (or the daemon, through a
// runtime thread with the acp backend) spawns, and the backend spec of its print-mode runs.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BackendSpec } from "../../domain/model.js";
import { AgentCraftError } from "./errors.js";
import type { AgentInstanceMeta, AgentTemplate } from "./protocol.js";

export interface AgentCommand {
  command: string;
  args: string[];
  /** Added to the daemon's environment, which the agent inherits. */
  env: Record<string, string>;
}

/** The `switchyard` command of this installation (the bundle next to this code). */
export function switchyardCli(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "switchyard.js");
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("switchyard.js was not found next to the AgentCraft face");
    dir = parent;
  }
}

/** Provider flags and environment of a `switchyard`-backed agent, from its template. */
function providerSettings(provider: AgentTemplate["provider"]): { args: string[]; env: Record<string, string> } {
  if (!provider) return { args: [], env: {} };
  const type = provider.type === "custom" ? "openai-chat" : provider.type;
  const { model, baseUrl } = provider.config ?? {};
  const env: Record<string, string> = {};
  if (typeof baseUrl === "string") env[type === "anthropic" ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL"] = baseUrl;
  return { args: ["--provider", type, ...(typeof model === "string" ? ["--model", model] : [])], env };
}

/** The ACP command line of an instance's agent, run with cwd = its workspace. */
export function agentCommand(meta: AgentInstanceMeta, template: AgentTemplate | undefined, stateDir: string): AgentCommand {
  const config = meta.backendConfig ?? {};
  const env = { ...(config.env ?? {}) };
  switch (meta.backendType) {
    case "switchyard": {
      const provider = providerSettings(template?.provider);
      const model = config.model && !provider.args.includes("--model") ? ["--model", config.model] : [];
      return {
        command: process.execPath,
        args: [switchyardCli(), "acp", "--data-dir", stateDir, ...provider.args, ...model],
        env: { ...provider.env, ...env },
      };
    }
    case "claude-code":
      return { command: config.executablePath ?? "claude-agent-acp", args: config.args ?? [], env };
    case "codex":
      return { command: config.executablePath ?? "codex-acp", args: config.args ?? [], env };
    case "custom":
      if (!config.executablePath) {
        throw new AgentCraftError("AGENT_LAUNCH", `Agent "${meta.name}" has a custom backend without backend.config.executablePath.`, {
          name: meta.name,
        });
      }
      return { command: config.executablePath, args: config.args ?? [], env };
    case "cursor":
      throw new AgentCraftError(
        "AGENT_LAUNCH",
        "The cursor backend has no Agent Client Protocol mode; use launch mode direct from Cursor itself.",
        {
          name: meta.name,
        },
      );
  }
}

/** The runtime backend of the agent's interactive sessions: its ACP command. */
export function sessionBackend(command: AgentCommand): BackendSpec {
  return { type: "acp", command: command.command, args: command.args, ...(Object.keys(command.env).length ? { env: command.env } : {}) };
}

/**
 * The runtime backend of a print-mode `agent.run`: Claude Code's and Codex's own CLIs
 * (`claude -p`, `codex app-server`) where they have one, else the ACP command.
 */
export function printBackend(meta: AgentInstanceMeta, command: AgentCommand): BackendSpec {
  const config = meta.backendConfig ?? {};
  if (meta.backendType === "claude-code") return { type: "claude-code", ...(config.env ? { env: config.env } : {}) };
  if (meta.backendType === "codex") return { type: "codex", ...(config.env ? { env: config.env } : {}) };
  return sessionBackend(command);
}
