// The AgentCraft home: where the socket, pid file, configs and instances live, and the catalog
// of templates and domain components loaded from configs/ when the daemon starts.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { z } from "zod";
import type { Logger } from "../../log.js";
import { AgentCraftError } from "./errors.js";
import { AgentTemplate, McpServerDefinition, PromptDefinition, SkillDefinition, WorkflowDefinition } from "./protocol.js";
import { writeFileDurably } from "../../durable-file.js";

export interface AgentCraftPaths {
  home: string;
  socket: string;
  pidFile: string;
  configs: string;
  instances: string;
  /** The daemon's Switchyard data (threads of every managed agent). */
  data: string;
  /** Per-instance state of `switchyard`-backed agents (each runs `switchyard acp` with its own data). */
  agentState: string;
  /** The detached daemon's log. */
  logFile: string;
}

export function agentCraftPaths(env: NodeJS.ProcessEnv): AgentCraftPaths {
  const home = path.resolve(env.AGENTCRAFT_HOME || path.join(os.homedir(), ".agentcraft"));
  return {
    home,
    socket: env.AGENTCRAFT_SOCKET ? path.resolve(env.AGENTCRAFT_SOCKET) : path.join(home, "agentcraft.sock"),
    pidFile: path.join(home, "daemon.pid"),
    configs: path.join(home, "configs"),
    instances: path.join(home, "instances"),
    data: path.join(home, "switchyard"),
    agentState: path.join(home, "agent-state"),
    logFile: path.join(home, "daemon.log"),
  };
}

export const COMPONENT_KINDS = {
  skill: { dir: "skills", schema: SkillDefinition },
  prompt: { dir: "prompts", schema: PromptDefinition },
  mcp: { dir: "mcp", schema: McpServerDefinition },
  workflow: { dir: "workflows", schema: WorkflowDefinition },
} as const;
export type ComponentKind = keyof typeof COMPONENT_KINDS;
export type Component<K extends ComponentKind> = z.output<(typeof COMPONENT_KINDS)[K]["schema"]>;

/** One problem of a file, with the path inside it (e.g. `backend.type`). */
export interface ValidationProblem {
  path: string;
  message: string;
}

/** Reads and validates a template file: the template, or every problem found. */
export function readTemplateFile(filePath: string): { template: AgentTemplate } | { errors: ValidationProblem[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(filePath, "utf8"));
  } catch (error) {
    return { errors: [{ path: "", message: `${filePath} cannot be read as JSON: ${(error as Error).message}` }] };
  }
  const parsed = AgentTemplate.safeParse(raw);
  if (parsed.success) return { template: parsed.data };
  return { errors: parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })) };
}

export class Catalog {
  private readonly templates = new Map<string, AgentTemplate>();
  private readonly components: { [K in ComponentKind]: Map<string, Component<K>> } = {
    skill: new Map(),
    prompt: new Map(),
    mcp: new Map(),
    workflow: new Map(),
  };

  constructor(
    private readonly configsDir: string,
    private readonly log: Logger,
  ) {}

  /** Loads every valid JSON file of configs/; an invalid one is logged and skipped. */
  load(): void {
    for (const sub of ["templates", ...Object.values(COMPONENT_KINDS).map((k) => k.dir)]) {
      mkdirSync(path.join(this.configsDir, sub), { recursive: true, mode: 0o700 });
    }
    for (const file of this.jsonFiles("templates")) {
      const read = readTemplateFile(file);
      if ("template" in read) this.templates.set(read.template.name, read.template);
      else this.log.warn({ file, errors: read.errors }, "skipping an invalid template");
    }
    for (const kind of Object.keys(COMPONENT_KINDS) as ComponentKind[]) this.loadKind(kind);
  }

  private loadKind<K extends ComponentKind>(kind: K): void {
    const { dir, schema } = COMPONENT_KINDS[kind];
    for (const file of this.jsonFiles(dir)) {
      try {
        const parsed = schema.safeParse(JSON.parse(readFileSync(file, "utf8")));
        if (parsed.success) this.components[kind].set(parsed.data.name, parsed.data as Component<K>);
        else this.log.warn({ file, issues: parsed.error.issues }, `skipping an invalid ${kind}`);
      } catch (error) {
        this.log.warn({ file, err: error }, `skipping an unreadable ${kind}`);
      }
    }
  }

  private jsonFiles(sub: string): string[] {
    const dir = path.join(this.configsDir, sub);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => path.join(dir, f));
  }

  listTemplates(): AgentTemplate[] {
    return [...this.templates.values()];
  }

  template(name: string): AgentTemplate {
    const found = this.templates.get(name);
    if (!found) throw new AgentCraftError("TEMPLATE_NOT_FOUND", `Template "${name}" is not loaded.`, { name });
    return found;
  }

  /** Validates and loads a template file, and keeps a copy in configs/templates for the next start. */
  loadTemplate(filePath: string): AgentTemplate {
    const read = readTemplateFile(filePath);
    if ("errors" in read) {
      const summary = read.errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; ");
      throw new AgentCraftError("CONFIG_VALIDATION", `Template ${filePath} is invalid: ${summary}`, { filePath, errors: read.errors });
    }
    writeFileDurably(this.templateFile(read.template.name), `${JSON.stringify(read.template, null, 2)}\n`, 0o600);
    this.templates.set(read.template.name, read.template);
    return read.template;
  }

  unloadTemplate(name: string): boolean {
    rmSync(this.templateFile(name), { force: true });
    return this.templates.delete(name);
  }

  private templateFile(name: string): string {
    return path.join(this.configsDir, "templates", `${encodeURIComponent(name)}.json`);
  }

  list<K extends ComponentKind>(kind: K): Array<Component<K>> {
    return [...this.components[kind].values()];
  }

  get<K extends ComponentKind>(kind: K, name: string): Component<K> {
    const found = this.components[kind].get(name);
    if (!found) throw new AgentCraftError("CONFIG_NOT_FOUND", `No ${kind} named "${name}" is loaded.`, { kind, name });
    return found;
  }

  /** For create time: a missing reference is COMPONENT_REFERENCE, naming what is missing. */
  resolve<K extends ComponentKind>(kind: K, name: string, template: string): Component<K> {
    const found = this.components[kind].get(name);
    if (!found) {
      throw new AgentCraftError("COMPONENT_REFERENCE", `Template "${template}" refers to the ${kind} "${name}", which is not loaded.`, {
        template,
        kind,
        name,
      });
    }
    return found;
  }
}
