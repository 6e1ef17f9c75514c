// What a workspace brings to its threads besides its files: skills, custom commands, and the
// announcements of their changes. One instance per server, asked per workspace path.
import { ConfigChanges } from "./changes.js";
import { Commands } from "./commands.js";
import { Skills } from "./skills.js";
import path from "node:path";
import { McpManager } from "./mcp/manager.js";
import { SubagentProfiles } from "./subagents.js";
import { WorkspaceDefaults } from "./defaults.js";
import { ExternalChannels } from "./channels.js";
import { Plugins } from "./plugins.js";

export interface WorkspaceResourcesOptions {
  /** The system skills shipped with Switchyard. */
  builtinSkillsDir: string;
  /** Switchyard's config dir (the data directory): the user's `skills/` and `commands/`. */
  configDir: string;
  env?: NodeJS.ProcessEnv;
  /** First restart delay of a failed MCP server (default 1 s). */
  mcpRestartDelayMs?: number;
}

export class WorkspaceResources {
  readonly changes = new ConfigChanges();
  readonly plugins: Plugins;
  readonly skills: Skills;
  readonly commands: Commands;
  readonly mcp: McpManager;
  readonly subagents: SubagentProfiles;
  readonly defaults: WorkspaceDefaults;
  readonly channels: ExternalChannels;

  constructor(options: WorkspaceResourcesOptions) {
    const env = options.env ?? process.env;
    // The built-in plugin catalog: DotCraft's variable, and Switchyard's.
    const catalogRoots = [env.SWITCHYARD_BUILTIN_PLUGIN_ROOTS, env.DOTCRAFT_BUILTIN_PLUGIN_ROOTS]
      .flatMap((roots) => (roots ? roots.split(path.delimiter) : []))
      .filter(Boolean);
    this.plugins = new Plugins(path.join(options.configDir, "plugins"), catalogRoots, this.changes);
    this.skills = new Skills(
      {
        builtin: options.builtinSkillsDir,
        user: path.join(options.configDir, "skills"),
        plugins: (workspacePath) => this.plugins.skillRoots(workspacePath),
      },
      this.changes,
      options.env,
    );
    this.commands = new Commands(path.join(options.configDir, "commands"));
    this.subagents = new SubagentProfiles(this.changes);
    this.defaults = new WorkspaceDefaults(this.changes);
    this.channels = new ExternalChannels(this.changes);
    this.mcp = new McpManager({
      env,
      changes: this.changes,
      ...(options.mcpRestartDelayMs ? { restartDelayMs: options.mcpRestartDelayMs } : {}),
    });
  }
}

export type { ConfigChange } from "./changes.js";
export type { SkillInfo, SkillSource } from "./skills.js";
export type { CommandInfo } from "./commands.js";
