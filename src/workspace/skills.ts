// Skills: folders with a SKILL.md (front matter `name`, `description`) that teach the agent a
// task. Enabled skills are offered to the model as a catalog; it loads one's content with the
// load_skill tool when it needs it. Sources, highest priority first: the workspace's
// (`.craft/skills`), plugins', the system skills shipped with Switchyard, the user's (the
// config dir's `skills`). A workspace may hold an adapted copy of another source's skill, its
// variant (`.craft/skill-variants/<name>`), which is what the agent sees until it is restored.
import fs from "node:fs";
import path from "node:path";
import { RuntimeError } from "../domain/errors.js";
import { RESOURCE_NAME, type ConfigChanges } from "./changes.js";
import { metadataString, parseFrontMatter } from "./front-matter.js";
import { craftDir, nameList, readSettings, setInList, updateSettings } from "./settings.js";

export type SkillSource = "workspace" | "plugin" | "builtin" | "user";

export interface SkillInfo {
  name: string;
  description: string;
  source: SkillSource;
  /** False when a requirement (`bins`, `env` in the front matter) is not met here. */
  available: boolean;
  unavailableReason: string | null;
  enabled: boolean;
  /** The source SKILL.md. */
  path: string;
  /** The agent sees the workspace's variant of this skill. */
  hasVariant?: boolean;
  pluginId?: string;
  metadata: Record<string, unknown>;
}

export interface SkillRoots {
  /** System skills shipped with Switchyard. */
  builtin: string;
  /** The user's skills, in Switchyard's config dir. */
  user: string;
  /** Skill folders of the workspace's enabled plugins. */
  plugins?(workspacePath: string): Array<{ pluginId: string; dir: string }>;
}

interface Found {
  name: string;
  source: SkillSource;
  dir: string;
  pluginId?: string;
}

const SKILL_FILE = "SKILL.md";
const RESTORED_MARKER = "RESTORED";
const variantsDir = (workspacePath: string): string => path.join(craftDir(workspacePath), "skill-variants");

export class Skills {
  constructor(
    private readonly roots: SkillRoots,
    private readonly changes: ConfigChanges,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  list(workspacePath: string, options: { includeUnavailable?: boolean } = {}): SkillInfo[] {
    const disabled = new Set(nameList(readSettings(workspacePath), "skills", "disabled"));
    const skills = [...this.discover(workspacePath).values()].map((found) => this.info(workspacePath, found, disabled));
    return options.includeUnavailable === false ? skills.filter((skill) => skill.available) : skills;
  }

  /** The source SKILL.md as written, and its front matter. */
  read(workspacePath: string, name: string): { name: string; content: string; metadata: Record<string, unknown> | null } {
    const found = this.find(workspacePath, name);
    const content = fs.readFileSync(path.join(found.dir, SKILL_FILE), "utf8");
    return { name, content, metadata: parseFrontMatter(content).metadata };
  }

  /** What the agent reads: the current variant's body, else the source's, without front matter. */
  view(workspacePath: string, name: string): { name: string; content: string } {
    const found = this.find(workspacePath, name);
    const file = this.currentVariant(workspacePath, name) ?? path.join(found.dir, SKILL_FILE);
    return { name, content: parseFrontMatter(fs.readFileSync(file, "utf8")).body };
  }

  /** Makes the agent see the source skill again; the variant stays on disk, marked restored. */
  restoreOriginal(workspacePath: string, name: string): { name: string; restored: boolean } {
    this.find(workspacePath, name);
    const variant = this.currentVariant(workspacePath, name);
    if (!variant) return { name, restored: false };
    fs.writeFileSync(path.join(path.dirname(variant), RESTORED_MARKER), `${new Date().toISOString()}\n`);
    this.changes.announce(workspacePath, "skills/restoreOriginal", ["skills"]);
    return { name, restored: true };
  }

  setEnabled(workspacePath: string, name: string, enabled: boolean): SkillInfo {
    const found = this.find(workspacePath, name);
    const disabledNow = nameList(readSettings(workspacePath), "skills", "disabled").includes(name);
    if (disabledNow === enabled) {
      updateSettings(workspacePath, (s) => setInList(s, "skills", "disabled", name, !enabled));
      this.changes.announce(workspacePath, "skills/setEnabled", ["skills"]);
    }
    return this.info(workspacePath, found, new Set(nameList(readSettings(workspacePath), "skills", "disabled")));
  }

  /** Deletes a workspace or user skill and its workspace variants; system and plugin skills refuse. */
  uninstall(
    workspacePath: string,
    name: string,
  ): { name: string; uninstalled: boolean; source: SkillSource; removedSourcePath: string; removedVariantCount: number } {
    const found = this.find(workspacePath, name);
    if (found.source !== "workspace" && found.source !== "user")
      throw new RuntimeError(
        "invalidInput",
        found.source === "builtin"
          ? `Skill ${name} ships with Switchyard and cannot be uninstalled; disable it with skills/setEnabled.`
          : `Skill ${name} belongs to plugin ${found.pluginId}; remove or disable the plugin instead.`,
      );
    fs.rmSync(found.dir, { recursive: true, force: true });
    const variant = path.join(variantsDir(workspacePath), name);
    const removedVariantCount = fs.existsSync(variant) ? 1 : 0;
    fs.rmSync(variant, { recursive: true, force: true });
    if (nameList(readSettings(workspacePath), "skills", "disabled").includes(name))
      updateSettings(workspacePath, (s) => setInList(s, "skills", "disabled", name, false));
    this.changes.announce(workspacePath, "skills/uninstall", ["skills"]);
    return { name, uninstalled: true, source: found.source, removedSourcePath: found.dir, removedVariantCount };
  }

  /** The enabled, available skills the agent is offered. */
  catalog(workspacePath: string): Array<{ name: string; description: string }> {
    return this.list(workspacePath)
      .filter((skill) => skill.enabled && skill.available)
      .map(({ name, description }) => ({ name, description }));
  }

  /** What the agent reads for an enabled skill; undefined when there is none by that name. */
  contentFor(workspacePath: string, name: string): string | undefined {
    if (nameList(readSettings(workspacePath), "skills", "disabled").includes(name)) return undefined;
    try {
      return this.view(workspacePath, name).content;
    } catch (error) {
      if (error instanceof RuntimeError && error.code === "skillNotFound") return undefined;
      throw error;
    }
  }

  private find(workspacePath: string, name: string): Found {
    const found = RESOURCE_NAME.test(name) ? this.discover(workspacePath).get(name) : undefined;
    if (!found) throw new RuntimeError("skillNotFound", `No skill named ${JSON.stringify(name)} in ${workspacePath}`, { name });
    return found;
  }

  /** Every skill by name, the highest-priority source's. */
  private discover(workspacePath: string): Map<string, Found> {
    const byName = new Map<string, Found>();
    const add = (source: SkillSource, root: string, pluginId?: string): void => {
      for (const name of skillFolders(root))
        if (!byName.has(name)) byName.set(name, { name, source, dir: path.join(root, name), ...(pluginId ? { pluginId } : {}) });
    };
    add("workspace", path.join(craftDir(workspacePath), "skills"));
    for (const plugin of this.roots.plugins?.(workspacePath) ?? []) add("plugin", plugin.dir, plugin.pluginId);
    add("builtin", this.roots.builtin);
    add("user", this.roots.user);
    return byName;
  }

  private info(workspacePath: string, found: Found, disabled: Set<string>): SkillInfo {
    const file = path.join(found.dir, SKILL_FILE);
    const metadata = parseFrontMatter(fs.readFileSync(file, "utf8")).metadata ?? {};
    const missing = this.missingRequirements(metadata);
    return {
      name: found.name,
      description: metadataString(metadata, "description") ?? found.name,
      source: found.source,
      available: missing.length === 0,
      unavailableReason: missing.length === 0 ? null : `missing ${missing.join(", ")}`,
      enabled: !disabled.has(found.name),
      path: file,
      ...(this.currentVariant(workspacePath, found.name) ? { hasVariant: true } : {}),
      ...(found.pluginId ? { pluginId: found.pluginId } : {}),
      metadata,
    };
  }

  private currentVariant(workspacePath: string, name: string): string | undefined {
    const dir = path.join(variantsDir(workspacePath), name);
    const file = path.join(dir, SKILL_FILE);
    return fs.existsSync(file) && !fs.existsSync(path.join(dir, RESTORED_MARKER)) ? file : undefined;
  }

  /** The front matter's `bins` (executables on PATH) and `env` (variables) that are missing. */
  private missingRequirements(metadata: Record<string, unknown>): string[] {
    const names = (key: string): string[] => {
      const value = metadata[key];
      const list = Array.isArray(value) ? value.map(String) : typeof value === "string" ? value.split(/[\s,]+/) : [];
      return list.filter(Boolean);
    };
    const pathDirs = (this.env.PATH ?? "").split(path.delimiter).filter(Boolean);
    const missingBins = names("bins").filter((bin) => !pathDirs.some((dir) => isExecutable(path.join(dir, bin))));
    const missingEnv = names("env").filter((name) => !this.env[name]);
    return [...missingBins.map((bin) => `executable ${bin}`), ...missingEnv.map((name) => `environment variable ${name}`)];
  }
}

/** The folders of `root` that hold a SKILL.md, by name. */
function skillFolders(root: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => entry.isDirectory() && RESOURCE_NAME.test(entry.name) && fs.existsSync(path.join(root, entry.name, SKILL_FILE)))
    .map((entry) => entry.name)
    .sort();
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
