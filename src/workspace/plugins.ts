// Plugins: folders with a `plugin.json` manifest that contribute functions (commands run with
// JSON input, offered to the model as tools, asked for approval like shell commands, recorded as
// pluginFunctionCall items) and skills (its `skills/` folder). Installed plugins live in the
// workspace (`.craft/plugins/<id>`) or the user's config dir (`plugins/<id>`); built-in ones
// come from the roots in SWITCHYARD_BUILTIN_PLUGIN_ROOTS or DOTCRAFT_BUILTIN_PLUGIN_ROOTS and
// are installed by copying them into the workspace with a `.builtin` marker.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { RuntimeError } from "../domain/errors.js";
import { defineTool, namespacedToolName, type AnyTool } from "../tools/tool.js";
import { RESOURCE_NAME, type ConfigChanges } from "./changes.js";
import { craftDir, nameList, readSettings, setInList, updateSettings } from "./settings.js";

export interface PluginFunction {
  name: string;
  description?: string;
  /** argv; elements starting with "./" are relative to the plugin's folder (the manifest's). */
  command: string[];
  inputSchema?: Record<string, unknown>;
}

export interface PluginManifest {
  id: string;
  displayName?: string;
  description?: string;
  version?: string;
  interface?: Record<string, unknown>;
  functions?: PluginFunction[];
}

export interface PluginInfo {
  id: string;
  displayName: string;
  description: string;
  enabled: boolean;
  installed: boolean;
  installable: boolean;
  removable: boolean;
  source: "workspace" | "user" | "builtin";
  version?: string;
  interface?: Record<string, unknown>;
  functions: Array<{ name: string; description: string }>;
  skills: Array<{ name: string; enabled: boolean }>;
  apps: unknown[];
  mcpServers: unknown[];
}

interface Found {
  manifest: PluginManifest;
  dir: string;
  source: PluginInfo["source"];
}

const MANIFEST = "plugin.json";
const BUILTIN_MARKER = ".builtin";
const MAX_OUTPUT = 256 * 1024;
const REGIONS = ["plugins", "skills", "mcp"];

export class Plugins {
  constructor(
    private readonly userDir: string,
    private readonly catalogRoots: string[],
    private readonly changes: ConfigChanges,
  ) {}

  list(workspacePath: string, options: { includeDisabled?: boolean } = {}): PluginInfo[] {
    const disabled = new Set(nameList(readSettings(workspacePath), "plugins", "disabled"));
    const installed = this.installed(workspacePath);
    const catalog = [...this.catalog().values()].filter((p) => !installed.has(p.manifest.id));
    const infos = [...[...installed.values()].map((p) => info(p, true, disabled)), ...catalog.map((p) => info(p, false, disabled))];
    return options.includeDisabled === false ? infos.filter((p) => p.enabled) : infos;
  }

  view(workspacePath: string, id: string): PluginInfo {
    const found = this.list(workspacePath).find((p) => p.id === id);
    if (!found) throw new RuntimeError("pluginNotFound", `No plugin ${JSON.stringify(id)}.`, { id });
    return found;
  }

  /** Copies a built-in plugin into the workspace (marked .builtin) and enables it. */
  install(workspacePath: string, id: string): PluginInfo {
    const source = this.catalog().get(id);
    if (!source)
      throw new RuntimeError(
        "pluginNotFound",
        `No built-in plugin ${JSON.stringify(id)} to install (see SWITCHYARD_BUILTIN_PLUGIN_ROOTS).`,
        { id },
      );
    const target = path.join(craftDir(workspacePath), "plugins", id);
    fs.rmSync(target, { recursive: true, force: true });
    fs.cpSync(source.dir, target, { recursive: true });
    fs.writeFileSync(
      path.join(target, BUILTIN_MARKER),
      `${JSON.stringify({ source: source.dir, version: source.manifest.version ?? null })}\n`,
    );
    if (nameList(readSettings(workspacePath), "plugins", "disabled").includes(id))
      updateSettings(workspacePath, (s) => setInList(s, "plugins", "disabled", id, false));
    this.changes.announce(workspacePath, "plugin/install", REGIONS);
    return this.view(workspacePath, id);
  }

  /** Deletes a plugin installed from the built-in catalog; user-made plugin folders are refused. */
  remove(workspacePath: string, id: string): PluginInfo {
    const found = this.installed(workspacePath).get(id);
    if (!found) throw new RuntimeError("pluginNotFound", `Plugin ${JSON.stringify(id)} is not installed.`, { id });
    if (found.source !== "workspace" || !fs.existsSync(path.join(found.dir, BUILTIN_MARKER)))
      throw new RuntimeError(
        "invalidInput",
        `Plugin ${id} was not installed from the built-in catalog (no ${BUILTIN_MARKER} marker); remove its folder yourself.`,
      );
    fs.rmSync(found.dir, { recursive: true, force: true });
    this.changes.announce(workspacePath, "plugin/remove", REGIONS);
    return this.list(workspacePath).find((p) => p.id === id) ?? { ...info(found, false, new Set()), installable: false };
  }

  setEnabled(workspacePath: string, id: string, enabled: boolean): PluginInfo {
    if (!this.installed(workspacePath).has(id))
      throw new RuntimeError("pluginNotFound", `Plugin ${JSON.stringify(id)} is not installed.`, { id });
    updateSettings(workspacePath, (s) => setInList(s, "plugins", "disabled", id, !enabled));
    this.changes.announce(workspacePath, "plugin/setEnabled", REGIONS);
    return this.view(workspacePath, id);
  }

  /** The skill folders of the enabled, installed plugins (for the skill catalog). */
  skillRoots(workspacePath: string): Array<{ pluginId: string; dir: string }> {
    return this.enabled(workspacePath).map((p) => ({ pluginId: p.manifest.id, dir: path.join(p.dir, "skills") }));
  }

  /** The functions of the enabled, installed plugins, as tools (plugin__<id>__<function>). */
  tools(workspacePath: string, timeoutMs: number): AnyTool[] {
    return this.enabled(workspacePath).flatMap((plugin) =>
      (plugin.manifest.functions ?? []).map((fn) => pluginTool(plugin, fn, timeoutMs)),
    );
  }

  private enabled(workspacePath: string): Found[] {
    let disabled: Set<string>;
    try {
      disabled = new Set(nameList(readSettings(workspacePath), "plugins", "disabled"));
    } catch {
      return [];
    }
    return [...this.installed(workspacePath).values()].filter((p) => !disabled.has(p.manifest.id));
  }

  private installed(workspacePath: string): Map<string, Found> {
    const found = new Map<string, Found>();
    for (const [source, root] of [
      ["workspace", path.join(craftDir(workspacePath), "plugins")],
      ["user", this.userDir],
    ] as const)
      for (const plugin of pluginsIn(root, source)) if (!found.has(plugin.manifest.id)) found.set(plugin.manifest.id, plugin);
    return found;
  }

  private catalog(): Map<string, Found> {
    const found = new Map<string, Found>();
    for (const root of this.catalogRoots)
      for (const plugin of pluginsIn(root, "builtin")) if (!found.has(plugin.manifest.id)) found.set(plugin.manifest.id, plugin);
    return found;
  }
}

/** The plugin folders of a root whose manifest is readable and whose id is its folder's name. */
function pluginsIn(root: string, source: Found["source"]): Found[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    if (!entry.isDirectory() || !RESOURCE_NAME.test(entry.name)) return [];
    const dir = path.join(root, entry.name);
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST), "utf8")) as PluginManifest;
      return manifest.id === entry.name ? [{ manifest, dir, source }] : [];
    } catch {
      return [];
    }
  });
}

function info(plugin: Found, installed: boolean, disabled: Set<string>): PluginInfo {
  const { manifest } = plugin;
  const skillsDir = path.join(plugin.dir, "skills");
  let skillNames: string[];
  try {
    skillNames = fs.readdirSync(skillsDir).filter((name) => fs.existsSync(path.join(skillsDir, name, "SKILL.md")));
  } catch {
    skillNames = [];
  }
  const enabled = installed && !disabled.has(manifest.id);
  return {
    id: manifest.id,
    displayName: manifest.displayName ?? manifest.id,
    description: manifest.description ?? "",
    enabled,
    installed,
    installable: !installed && plugin.source === "builtin",
    removable: installed && plugin.source === "workspace" && fs.existsSync(path.join(plugin.dir, BUILTIN_MARKER)),
    source: plugin.source,
    ...(manifest.version ? { version: manifest.version } : {}),
    ...(manifest.interface ? { interface: manifest.interface } : {}),
    functions: (manifest.functions ?? []).map((fn) => ({ name: fn.name, description: fn.description ?? "" })),
    skills: skillNames.map((name) => ({ name, enabled })),
    apps: [],
    mcpServers: [],
  };
}

function pluginTool(plugin: Found, fn: PluginFunction, timeoutMs: number): AnyTool {
  const id = plugin.manifest.id;
  return defineTool({
    name: namespacedToolName("plugin", id, fn.name),
    description: `${fn.description ?? fn.name} (function ${fn.name} of plugin ${id})`,
    kind: "write",
    input: z.record(z.string(), z.unknown()),
    parameters: fn.inputSchema ?? { type: "object", properties: {} },
    plugin: { id, functionName: fn.name },
    approval: (input) => ({
      approvalType: "shell",
      operation: `plugin ${id}: ${fn.name} ${JSON.stringify(input).slice(0, 500)}`,
      target: plugin.dir,
      scopeKey: `plugin:${id}:${fn.name}`,
      reason: `The agent wants to run function ${fn.name} of plugin ${id}.`,
    }),
    execute: (input, ctx) => runFunction(plugin.dir, fn, input, ctx.workspace.root, ctx.signal, timeoutMs),
  });
}

/** Runs the function's command in the workspace with the input as JSON on stdin; stdout is its result. */
function runFunction(
  pluginDir: string,
  fn: PluginFunction,
  input: unknown,
  cwd: string,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<{ output: string; isError?: boolean }> {
  const [program, ...args] = fn.command.map((part) => (part.startsWith("./") ? path.join(pluginDir, part) : part));
  if (!program) return Promise.resolve({ output: `Function ${fn.name} has no command.`, isError: true });
  return new Promise((resolve) => {
    const child = spawn(program, args, {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", SWITCHYARD_PLUGIN_DIR: pluginDir },
      stdio: ["pipe", "pipe", "pipe"],
      signal,
      timeout: timeoutMs,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout = (stdout + chunk.toString()).slice(0, MAX_OUTPUT)));
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-MAX_OUTPUT)));
    child.on("error", (error) => resolve({ output: `Function ${fn.name} could not run: ${error.message}`, isError: true }));
    child.on("close", (code, killed) => {
      if (code === 0) resolve({ output: stdout });
      else
        resolve({
          output: `Function ${fn.name} failed (${killed ?? `exit code ${code}`}): ${stderr.trim() || stdout.trim()}`,
          isError: true,
        });
    });
    child.stdin.end(JSON.stringify(input ?? {}));
  });
}
