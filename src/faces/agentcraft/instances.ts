// Agent instances on disk: each is a workspace with its `.agentcraft.json` (AgentInstanceMeta)
// and the context files its backend reads. Metadata writes are atomic; a corrupted file is
// INSTANCE_CORRUPTED, never a crash. Destroy removes only what AgentCraft wrote.
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { AgentCraftError, notFound } from "./errors.js";
import { writeFileDurably } from "../../durable-file.js";
import type { Catalog } from "./home.js";
import { AgentInstanceMeta, type AgentTemplate, type LaunchMode } from "./protocol.js";

export const META_FILE = ".agentcraft.json";

export interface CreateOptions {
  launchMode?: LaunchMode;
  workspacePolicy?: "persistent" | "ephemeral";
  workDir?: string;
  workDirConflict?: "error" | "overwrite" | "append";
  metadata?: Record<string, string>;
}

/** The instance's metadata as stored, plus the files AgentCraft wrote (for destroy). */
type StoredMeta = AgentInstanceMeta & { contextFiles?: string[] };

export class Instances {
  constructor(
    private readonly dir: string,
    private readonly catalog: Catalog,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  private entry(name: string): string {
    return path.join(this.dir, name);
  }

  exists(name: string): boolean {
    try {
      lstatSync(this.entry(name));
      return true;
    } catch {
      return false;
    }
  }

  /** Throws AGENT_NOT_FOUND or INSTANCE_CORRUPTED. */
  get(name: string): AgentInstanceMeta {
    return strip(this.read(name));
  }

  private read(name: string): StoredMeta {
    if (!this.exists(name)) throw notFound(name);
    const file = path.join(this.entry(name), META_FILE);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new AgentCraftError(
        "INSTANCE_CORRUPTED",
        `The metadata of agent "${name}" (${file}) cannot be read: ${(error as Error).message}`,
        {
          name,
          file,
        },
      );
    }
    const parsed = AgentInstanceMeta.passthrough().safeParse(raw);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      throw new AgentCraftError(
        "INSTANCE_CORRUPTED",
        `The metadata of agent "${name}" (${file}) is invalid: ${first?.path.join(".")}: ${first?.message}`,
        { name, file },
      );
    }
    return parsed.data as StoredMeta;
  }

  /** Every instance; corrupted ones are left out (agent.status names them). */
  list(): AgentInstanceMeta[] {
    const names = existsSync(this.dir) ? readdirSync(this.dir).sort() : [];
    return names.flatMap((name) => {
      try {
        return [this.get(name)];
      } catch {
        return [];
      }
    });
  }

  /** Writes the metadata atomically with the changes; returns the new metadata. */
  update(name: string, changes: Partial<AgentInstanceMeta>): AgentInstanceMeta {
    const current = this.read(name);
    const next: StoredMeta = { ...current, ...changes, updatedAt: new Date().toISOString() };
    for (const key of Object.keys(changes) as Array<keyof AgentInstanceMeta>) {
      if (changes[key] === undefined) delete next[key];
    }
    writeFileDurably(path.join(this.entry(name), META_FILE), `${JSON.stringify(next, null, 2)}\n`, 0o600);
    return strip(next);
  }

  /** Materializes the workspace: directory (or workDir + link), context files, metadata. */
  create(name: string, template: AgentTemplate, opts: CreateOptions = {}): AgentInstanceMeta {
    if (this.exists(name)) {
      throw new AgentCraftError("WORKSPACE_INIT", `An agent named "${name}" exists already.`, { name });
    }
    const files = contextFiles(template, this.catalog);
    const workDir = opts.workDir ? path.resolve(opts.workDir) : undefined;
    const workspaceDir = workDir ?? this.entry(name);
    const conflict = opts.workDirConflict ?? "error";
    if (workDir && existsSync(workDir) && readdirSync(workDir).length > 0 && conflict === "error") {
      throw new AgentCraftError(
        "WORKSPACE_INIT",
        `The work directory ${workDir} exists and is not empty: pass workDirConflict "overwrite" or "append".`,
        { name, workDir },
      );
    }
    const written: string[] = [];
    try {
      mkdirSync(workspaceDir, { recursive: true, mode: 0o700 });
      for (const [relative, content] of Object.entries(files)) {
        const file = path.join(workspaceDir, relative);
        mkdirSync(path.dirname(file), { recursive: true });
        const existed = existsSync(file);
        if (existed && conflict === "append") appendFileSync(file, `\n${content}`);
        else writeFileDurably(file, content, 0o600);
        // Appended-to files are the user's: destroy leaves them.
        if (!existed) written.push(relative);
      }
      if (workDir) symlinkSync(workDir, this.entry(name), "dir");
      const now = new Date().toISOString();
      const meta: StoredMeta = {
        id: randomUUID(),
        name,
        templateName: template.name,
        templateVersion: template.version,
        backendType: template.backend.type,
        ...(template.backend.config ? { backendConfig: template.backend.config } : {}),
        status: "created",
        launchMode: opts.launchMode ?? template.launchMode ?? "acp-background",
        workspacePolicy: opts.workspacePolicy ?? template.workspacePolicy ?? "persistent",
        createdAt: now,
        updatedAt: now,
        ...(opts.metadata || template.metadata ? { metadata: { ...template.metadata, ...opts.metadata } } : {}),
        workspaceDir,
        contextFiles: written,
      };
      writeFileDurably(path.join(workspaceDir, META_FILE), `${JSON.stringify(meta, null, 2)}\n`, 0o600);
      return strip(meta);
    } catch (error) {
      if (workDir) for (const relative of written) rmSync(path.join(workDir, relative), { force: true });
      else rmSync(workspaceDir, { recursive: true, force: true });
      rmSync(this.entry(name), { force: true });
      if (error instanceof AgentCraftError) throw error;
      throw new AgentCraftError("WORKSPACE_INIT", `Could not create the workspace of "${name}": ${(error as Error).message}`, {
        name,
        workspaceDir,
      });
    }
  }

  /**
   * Removes the instance: its own directory whole; for a workDir, only the link, the metadata
   * and the context files AgentCraft created there. A corrupted one is removed only with force.
   */
  destroy(name: string, force = false): void {
    if (!this.exists(name)) throw notFound(name);
    const entry = this.entry(name);
    const linked = lstatSync(entry).isSymbolicLink();
    let meta: StoredMeta | undefined;
    try {
      meta = this.read(name);
    } catch (error) {
      if (!force) throw error;
    }
    if (!linked) {
      rmSync(entry, { recursive: true, force: true });
      return;
    }
    const workDir = meta?.workspaceDir;
    if (workDir) {
      for (const relative of meta?.contextFiles ?? []) rmSync(path.join(workDir, relative), { force: true });
      rmSync(path.join(workDir, META_FILE), { force: true });
    }
    rmSync(entry, { force: true });
  }
}

function strip(meta: StoredMeta): AgentInstanceMeta {
  const { contextFiles: _files, ...rest } = meta;
  return rest;
}

/** The files an instance's backend reads, from its template's domain context. */
function contextFiles(template: AgentTemplate, catalog: Catalog): Record<string, string> {
  const ctx = template.domainContext;
  const skills = ctx.skills.map((s) => catalog.resolve("skill", s, template.name));
  const prompts = ctx.prompts.map((p) => catalog.resolve("prompt", p, template.name));
  const workflow = ctx.workflow ? catalog.resolve("workflow", ctx.workflow, template.name) : undefined;
  const mcpServers = ctx.mcpServers.map((m) => (typeof m === "string" ? catalog.resolve("mcp", m, template.name) : m));

  const sections = [`# ${template.name}`, template.description ?? ""];
  for (const prompt of prompts) sections.push(prompt.content);
  for (const skill of skills) sections.push(`## Skill: ${skill.name}\n\n${skill.content}`);
  if (workflow) sections.push(`## Workflow: ${workflow.name}\n\n${workflow.content}`);
  const instructions = `${sections.filter(Boolean).join("\n\n")}\n`;

  const files: Record<string, string> = { "AGENTS.md": instructions };
  if (prompts.length > 0) files["prompts/system.md"] = `${prompts.map((p) => p.content).join("\n\n")}\n`;
  if (workflow) files["workflow.md"] = `${workflow.content}\n`;
  const servers = Object.fromEntries(
    mcpServers.map((m) => [m.name, { command: m.command, ...(m.args ? { args: m.args } : {}), ...(m.env ? { env: m.env } : {}) }]),
  );
  if (template.backend.type === "claude-code") {
    files["CLAUDE.md"] = instructions;
    if (mcpServers.length > 0) {
      files[".claude/mcp.json"] = `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`;
      const allow = mcpServers.map((m) => `mcp__${m.name}`);
      files[".claude/settings.local.json"] = `${JSON.stringify({ permissions: { allow } }, null, 2)}\n`;
    }
  } else if (mcpServers.length > 0) {
    files[".mcp.json"] = `${JSON.stringify({ mcpServers: servers }, null, 2)}\n`;
  }
  return files;
}
