// Subagent profiles: who the agent can hand a task to (the run_subagent tool). A profile is a
// system prompt, optionally a model and a list of allowed tools. Two are built in (general,
// explorer); a workspace adds its own or overrides a built-in one in `.craft/config.json`
// (`subagent.profiles`, `subagent.disabledProfiles`, `subagent.model`).
import { RuntimeError } from "../domain/errors.js";
import { RESOURCE_NAME, type ConfigChanges } from "./changes.js";
import { nameList, readSettings, section, updateSettings, type Settings } from "./settings.js";

export interface SubagentDefinition {
  /** Only "native" (Switchyard's own engine) in this version. */
  runtime: "native";
  description: string;
  systemPrompt?: string;
  model?: string;
  provider?: string;
  /** The tools it is offered, by name; all of the parent's when absent. */
  tools?: string[];
}

export interface SubagentProfileEntry {
  name: string;
  isBuiltIn: boolean;
  isTemplate: boolean;
  hasWorkspaceOverride: boolean;
  isDefault: boolean;
  enabled: boolean;
  definition: SubagentDefinition;
  builtInDefaults?: SubagentDefinition;
  diagnostic: { enabled: boolean; binaryResolved: boolean; hiddenFromPrompt: boolean; warnings: string[] };
}

export const DEFAULT_PROFILE = "general";

const BUILT_IN: Record<string, SubagentDefinition> = {
  general: {
    runtime: "native",
    description: "A helper with the same tools as you, for a self-contained part of the task.",
  },
  explorer: {
    runtime: "native",
    description: "Reads and searches the workspace to answer a question; changes nothing.",
    systemPrompt:
      "You explore a code base to answer one question. Read and search; never change files or run commands. Answer with the facts found and the files they come from.",
    tools: ["read_file", "list_files", "glob", "search_files"],
  },
};

export class SubagentProfiles {
  constructor(private readonly changes: ConfigChanges) {}

  list(workspacePath: string): { defaultName: string; settings: { model: string | null }; profiles: SubagentProfileEntry[] } {
    const settings = readSettings(workspacePath);
    const custom = customProfiles(settings);
    const names = [...new Set([...Object.keys(BUILT_IN), ...Object.keys(custom)])];
    const model = defaultModel(settings);
    return {
      defaultName: DEFAULT_PROFILE,
      settings: { model: model ?? null },
      profiles: names.map((name) => entry(name, settings)),
    };
  }

  /** An enabled profile's definition; invalidInput when there is none by that name. */
  definition(workspacePath: string, name = DEFAULT_PROFILE): SubagentDefinition & { model?: string } {
    const found = this.list(workspacePath).profiles.find((p) => p.name === name && p.enabled);
    if (!found) throw new RuntimeError("invalidInput", `No enabled subagent profile named "${name}".`);
    const model = defaultModel(readSettings(workspacePath));
    return { ...found.definition, ...(!found.definition.model && model ? { model } : {}) };
  }

  upsert(workspacePath: string, name: string, definition: SubagentDefinition): SubagentProfileEntry {
    if (!RESOURCE_NAME.test(name))
      throw new RuntimeError("subagentValidationFailed", `Profile name "${name}" must be letters, digits, ".", "_" or "-".`);
    if (definition.runtime !== "native")
      throw new RuntimeError("subagentValidationFailed", `Runtime "${String(definition.runtime)}" is not supported; use "native".`);
    const settings = updateSettings(workspacePath, (s) => {
      const profiles = section(section(s, "subagent"), "profiles");
      profiles[name] = definition;
    });
    this.changes.announce(workspacePath, "subagent/profiles/upsert", ["subagent"]);
    return entry(name, settings);
  }

  setEnabled(workspacePath: string, name: string, enabled: boolean): SubagentProfileEntry {
    this.find(workspacePath, name);
    if (name === DEFAULT_PROFILE && !enabled)
      throw new RuntimeError("subagentProtected", `The ${DEFAULT_PROFILE} profile cannot be disabled.`);
    const settings = updateSettings(workspacePath, (s) => {
      const disabled = new Set(nameList(s, "subagent", "disabledProfiles"));
      if (enabled) disabled.delete(name);
      else disabled.add(name);
      section(s, "subagent").disabledProfiles = [...disabled].sort();
    });
    this.changes.announce(workspacePath, "subagent/profiles/setEnabled", ["subagent"]);
    return entry(name, settings);
  }

  /** Removes a workspace profile, or a workspace's override of a built-in one. */
  remove(workspacePath: string, name: string): void {
    const custom = customProfiles(readSettings(workspacePath));
    if (!custom[name]) {
      if (BUILT_IN[name]) throw new RuntimeError("subagentNotFound", `The built-in profile ${name} has no workspace override to remove.`);
      throw new RuntimeError("subagentNotFound", `No subagent profile named "${name}".`);
    }
    updateSettings(workspacePath, (s) => {
      delete (section(section(s, "subagent"), "profiles") as Record<string, unknown>)[name];
    });
    this.changes.announce(workspacePath, "subagent/profiles/remove", ["subagent"]);
  }

  updateSettings(workspacePath: string, change: { model?: string | null }): { model: string | null } {
    updateSettings(workspacePath, (s) => {
      const sub = section(s, "subagent");
      if (change.model) sub.model = change.model;
      else delete sub.model;
    });
    this.changes.announce(workspacePath, "subagent/settings/update", ["subagent"]);
    return this.list(workspacePath).settings;
  }

  private find(workspacePath: string, name: string): SubagentProfileEntry {
    const found = this.list(workspacePath).profiles.find((p) => p.name === name);
    if (!found) throw new RuntimeError("subagentNotFound", `No subagent profile named "${name}".`);
    return found;
  }
}

/** The workspace's model for subagents whose profile names none. */
function defaultModel(settings: Settings): string | undefined {
  const model = (settings.subagent as { model?: unknown } | undefined)?.model;
  return typeof model === "string" && model ? model : undefined;
}

function customProfiles(settings: Settings): Record<string, SubagentDefinition> {
  const profiles = (settings.subagent as { profiles?: unknown } | undefined)?.profiles;
  return profiles && typeof profiles === "object" && !Array.isArray(profiles) ? (profiles as Record<string, SubagentDefinition>) : {};
}

function entry(name: string, settings: Settings): SubagentProfileEntry {
  const custom = customProfiles(settings)[name];
  const builtIn = BUILT_IN[name];
  const enabled = !nameList(settings, "subagent", "disabledProfiles").includes(name);
  return {
    name,
    isBuiltIn: builtIn !== undefined,
    isTemplate: false,
    hasWorkspaceOverride: builtIn !== undefined && custom !== undefined,
    isDefault: name === DEFAULT_PROFILE,
    enabled,
    definition: custom ?? builtIn!,
    ...(builtIn ? { builtInDefaults: builtIn } : {}),
    diagnostic: { enabled, binaryResolved: true, hiddenFromPrompt: !enabled, warnings: [] },
  };
}
