// The agent manager: instances' lifecycle (created → starting → running → stopping → stopped,
// error, crashed), managed agents as runtime threads (backend acp) whose process is watched,
// attached external processes, acp-service restarts, and prompts.
import { readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { Logger } from "../../log.js";
import type { RuntimeApi } from "../../runtime/api.js";
import type { ApprovalPolicy } from "../../domain/model.js";
import { AgentCraftError } from "./errors.js";
import type { AgentCraftPaths, Catalog } from "./home.js";
import { Instances, META_FILE, type CreateOptions } from "./instances.js";
import { agentCommand, printBackend, sessionBackend, type AgentCommand } from "./launch.js";
import { pidAlive } from "../../pid.js";
import { ProcessWatcher, RestartTracker, type RestartPolicy } from "./process-watch.js";
import type { AgentInstanceMeta, AgentTemplate, RunOptions } from "./protocol.js";
import { promptThread } from "./wire.js";

export const ORIGIN_CHANNEL = "agentcraft";

export interface ManagerOptions {
  watchIntervalMs: number;
  restart?: RestartPolicy;
}

export class AgentManager {
  readonly instances: Instances;
  private readonly watcher: ProcessWatcher;
  private readonly restarts: RestartTracker;
  private readonly restartTimers = new Map<string, NodeJS.Timeout>();
  private readonly startedAt = Date.now();

  constructor(
    private readonly runtime: RuntimeApi,
    readonly catalog: Catalog,
    private readonly paths: AgentCraftPaths,
    private readonly log: Logger,
    opts: ManagerOptions,
  ) {
    this.instances = new Instances(paths.instances, catalog);
    this.watcher = new ProcessWatcher(
      opts.watchIntervalMs,
      (name, pid) => this.processExited(name, pid),
      (error) => log.error({ err: error }, "handling an agent's exit failed"),
    );
    this.restarts = new RestartTracker(opts.restart);
  }

  // ---- instances ----

  create(name: string, templateName: string, overrides: CreateOptions = {}): AgentInstanceMeta {
    return this.instances.create(name, this.catalog.template(templateName), overrides);
  }

  /** The instance's template, if still loaded (provider settings of switchyard agents). */
  private templateOf(meta: AgentInstanceMeta): AgentTemplate | undefined {
    return this.catalog.listTemplates().find((t) => t.name === meta.templateName);
  }

  /**
   * The agent's ACP command. A `switchyard` agent keeps its own data directory, one per process:
   * the instance's, or a leased session's (`session`), since each session runs its own process.
   */
  command(meta: AgentInstanceMeta, session?: string): AgentCommand {
    const state = path.join(this.paths.agentState, meta.name, session ?? "main");
    return agentCommand(meta, this.templateOf(meta), state);
  }

  resolve(name: string, template: string | undefined, overrides: CreateOptions) {
    let created = false;
    if (!this.instances.exists(name)) {
      if (!template)
        throw new AgentCraftError("AGENT_NOT_FOUND", `Agent "${name}" does not exist and no template was given to create it.`, { name });
      this.create(name, template, overrides);
      created = true;
    }
    const meta = this.instances.get(name);
    const { command, args, env } = this.command(meta);
    return { instanceName: name, workspaceDir: meta.workspaceDir, backendType: meta.backendType, command, args, env, created };
  }

  async destroy(name: string, force = false): Promise<void> {
    if (this.instances.exists(name)) {
      let meta: AgentInstanceMeta | undefined;
      try {
        meta = this.instances.get(name);
      } catch (error) {
        if (!force) throw error;
      }
      if (meta && isRunning(meta)) {
        if (meta.processOwnership === "external" && !force) {
          throw new AgentCraftError(
            "AGENT_ALREADY_ATTACHED",
            `Agent "${name}" is attached to process ${meta.pid}: detach it first, or pass force.`,
            {
              name,
              pid: meta.pid,
            },
          );
        }
        await this.stop(name);
      }
    }
    this.instances.destroy(name, force);
    this.restarts.forget(name);
    rmSync(path.join(this.paths.agentState, name), { recursive: true, force: true });
  }

  // ---- lifecycle ----

  async start(name: string): Promise<AgentInstanceMeta> {
    const meta = this.instances.get(name);
    if (isRunning(meta)) {
      throw new AgentCraftError("AGENT_ALREADY_RUNNING", `Agent "${name}" is ${meta.status} already.`, { name, pid: meta.pid });
    }
    return this.launch(meta);
  }

  private async launch(meta: AgentInstanceMeta): Promise<AgentInstanceMeta> {
    const { name } = meta;
    this.instances.update(name, { status: "starting", lastError: undefined });
    try {
      const threadId = await this.sessionThread(meta);
      const { pid, capabilities } = await this.runtime.startAgent(threadId);
      this.restarts.started(name);
      if (pid !== undefined) this.watcher.watch(name, pid);
      this.log.info({ agent: name, pid, threadId }, "agent started");
      return this.instances.update(name, {
        status: "running",
        processOwnership: "managed",
        pid,
        threadId,
        ...(capabilities ? { agentCapabilities: capabilities } : {}),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.instances.update(name, { status: "error", lastError: message, pid: undefined, processOwnership: undefined });
      if (error instanceof AgentCraftError) throw error;
      throw new AgentCraftError("AGENT_LAUNCH", `Agent "${name}" could not be started: ${message}`, { name });
    }
  }

  /** The runtime thread of the agent's main session, created on first start. */
  private async sessionThread(meta: AgentInstanceMeta): Promise<string> {
    const backend = sessionBackend(this.command(meta));
    const existing = meta.threadId ? await this.runtime.findThread(meta.threadId) : undefined;
    if (existing) {
      if (JSON.stringify(existing.configuration?.backend) !== JSON.stringify(backend))
        await this.runtime.configureThread(existing.id, { backend });
      return existing.id;
    }
    return this.newThread(meta, backend, meta.name).id;
  }

  /** A session thread of the agent. The agent asks its own client for approvals, so by default the runtime approves. */
  newThread(
    meta: AgentInstanceMeta,
    backend = sessionBackend(this.command(meta)),
    displayName?: string,
    approvalPolicy: ApprovalPolicy = "autoApprove",
  ) {
    return this.runtime.startThread({
      workspacePath: meta.workspaceDir,
      originChannel: ORIGIN_CHANNEL,
      channelContext: `agent:${meta.name}`,
      ...(displayName ? { displayName } : {}),
      configuration: { backend, approvalPolicy },
      metadata: { agentcraft: { instance: meta.name, template: meta.templateName } },
    });
  }

  async stop(name: string): Promise<AgentInstanceMeta> {
    const meta = this.instances.get(name);
    this.watcher.unwatch(name);
    clearTimeout(this.restartTimers.get(name));
    this.restartTimers.delete(name);
    if (meta.processOwnership === "managed" || meta.status === "starting") {
      this.instances.update(name, { status: "stopping" });
      if (meta.threadId && (await this.runtime.findThread(meta.threadId))) await this.runtime.stopAgent(meta.threadId);
    }
    this.log.info({ agent: name }, "agent stopped");
    return this.instances.update(name, { status: "stopped", pid: undefined, processOwnership: undefined, agentCapabilities: undefined });
  }

  attach(name: string, pid: number, metadata?: Record<string, string>): AgentInstanceMeta {
    const meta = this.instances.get(name);
    if (isRunning(meta)) {
      throw meta.processOwnership === "external"
        ? new AgentCraftError("AGENT_ALREADY_ATTACHED", `Agent "${name}" is attached to process ${meta.pid} already.`, {
            name,
            pid: meta.pid,
          })
        : new AgentCraftError("AGENT_ALREADY_RUNNING", `Agent "${name}" is running under the daemon.`, { name, pid: meta.pid });
    }
    if (!pidAlive(pid)) throw new AgentCraftError("GENERIC_BUSINESS", `No process ${pid} is running.`, { name, pid });
    this.watcher.watch(name, pid);
    return this.instances.update(name, {
      status: "running",
      processOwnership: "external",
      pid,
      ...(metadata ? { metadata: { ...meta.metadata, ...metadata } } : {}),
    });
  }

  async detach(name: string, cleanup = false): Promise<{ ok: boolean; workspaceCleaned: boolean }> {
    const meta = this.instances.get(name);
    if (meta.processOwnership !== "external") {
      throw new AgentCraftError("AGENT_NOT_ATTACHED", `Agent "${name}" is not attached to an external process.`, { name });
    }
    this.watcher.unwatch(name);
    this.instances.update(name, { status: "stopped", pid: undefined, processOwnership: undefined });
    if (cleanup && meta.workspacePolicy === "ephemeral") {
      await this.destroy(name);
      return { ok: true, workspaceCleaned: true };
    }
    return { ok: true, workspaceCleaned: false };
  }

  /** The watcher saw the agent's process gone without a stop or detach. */
  private async processExited(name: string, pid: number): Promise<void> {
    if (!this.instances.exists(name)) return;
    const meta = this.instances.get(name);
    if (meta.pid !== pid) return;
    if (meta.processOwnership === "external") {
      this.log.warn({ agent: name, pid }, "an attached agent's process died without a detach");
      this.instances.update(name, { status: "crashed", pid: undefined });
      return;
    }
    if (meta.launchMode !== "acp-service") {
      this.log.info({ agent: name, pid }, "agent process exited");
      this.instances.update(name, { status: "stopped", pid: undefined, processOwnership: undefined });
      return;
    }
    const delay = this.restarts.next(name);
    if (delay === undefined) {
      this.log.error({ agent: name }, "acp-service agent crashed too often; not restarting it");
      this.instances.update(name, { status: "error", pid: undefined, lastError: "The agent crashed too often; it was not restarted." });
      return;
    }
    this.log.warn({ agent: name, pid, delayMs: delay }, "acp-service agent exited; restarting it");
    this.instances.update(name, { status: "crashed", pid: undefined, metadata: { ...meta.metadata, lastRestartDelayMs: String(delay) } });
    this.restartTimers.set(
      name,
      setTimeout(() => {
        this.restartTimers.delete(name);
        if (!this.instances.exists(name)) return;
        this.launch(this.instances.get(name)).catch((error: unknown) => this.log.error({ err: error, agent: name }, "restart failed"));
      }, delay),
    );
  }

  /**
   * After a daemon restart: instances left running or starting by the previous daemon. Its
   * processes are gone (reaped at start-up): acp-service agents start again, the rest stop;
   * attached processes still alive are watched again, dead ones crashed.
   */
  async reconcile(): Promise<void> {
    for (const meta of this.instances.list()) {
      if (!isRunning(meta) && meta.status !== "stopping") continue;
      if (meta.processOwnership === "external" && meta.pid !== undefined) {
        if (pidAlive(meta.pid)) this.watcher.watch(meta.name, meta.pid);
        else this.instances.update(meta.name, { status: "crashed", pid: undefined });
      } else if (meta.launchMode === "acp-service") {
        this.log.info({ agent: meta.name }, "restarting an acp-service agent after a daemon restart");
        await this.launch(meta).catch((error: unknown) => this.log.error({ err: error, agent: meta.name }, "restart failed"));
      } else {
        this.instances.update(meta.name, { status: "stopped", pid: undefined, processOwnership: undefined });
      }
    }
  }

  /** Daemon shutdown: managed agents stop; attached ones are the caller's. */
  async shutdown(): Promise<void> {
    this.watcher.close();
    for (const timer of this.restartTimers.values()) clearTimeout(timer);
    for (const meta of this.instances.list()) {
      if (meta.processOwnership === "managed" || meta.status === "starting") await this.stop(meta.name).catch(() => undefined);
    }
  }

  ping(version: string): { version: string; uptime: number; agents: number } {
    return { version, uptime: Math.round((Date.now() - this.startedAt) / 1000), agents: this.instances.list().filter(isRunning).length };
  }

  // ---- prompts ----

  /** agent.prompt: a message on a started agent's session (its main one, or sessionId). */
  async prompt(name: string, message: string, sessionId?: string): Promise<{ response: string; sessionId: string }> {
    const meta = this.instances.get(name);
    if (meta.processOwnership !== "managed" || !meta.threadId) {
      throw new AgentCraftError("AGENT_NOT_ATTACHED", `Agent "${name}" is not started by the daemon: run agentcraft agent start ${name}.`, {
        name,
      });
    }
    const threadId = sessionId ?? meta.threadId;
    await this.ownThread(meta, threadId);
    const { text } = await promptThread(this.runtime, threadId, message);
    if (meta.launchMode === "one-shot") await this.finishOneShot(name);
    return { response: text, sessionId: threadId };
  }

  /** The thread must be one of this agent's sessions. */
  private async ownThread(meta: AgentInstanceMeta, threadId: string): Promise<void> {
    const thread = await this.runtime.findThread(threadId);
    const owner = (thread?.metadata.agentcraft as { instance?: string } | undefined)?.instance;
    if (owner !== meta.name) {
      throw new AgentCraftError("GENERIC_BUSINESS", `Session ${threadId} is not a session of agent "${meta.name}".`, {
        name: meta.name,
        sessionId: threadId,
      });
    }
  }

  /** agent.run {name, prompt, options}: on the started agent's session, else print mode in its workspace. */
  async runOnInstance(name: string, prompt: string, options: RunOptions = {}): Promise<{ text: string; sessionId?: string }> {
    const meta = this.instances.get(name);
    const text = [options.appendSystemPrompt, prompt].filter(Boolean).join("\n\n");
    const opts = { ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}), ...(options.model ? { model: options.model } : {}) };
    if (meta.processOwnership === "managed" && meta.threadId) {
      const threadId = options.sessionId ?? meta.threadId;
      await this.ownThread(meta, threadId);
      return { text: (await promptThread(this.runtime, threadId, text, opts)).text, sessionId: threadId };
    }
    let threadId = options.sessionId;
    if (threadId) await this.ownThread(meta, threadId);
    else threadId = this.newThread(meta, printBackend(meta, this.command(meta)), `${name} (run)`).id;
    try {
      return { text: (await promptThread(this.runtime, threadId, text, opts)).text, sessionId: threadId };
    } finally {
      await this.runtime.stopAgent(threadId);
    }
  }

  /** agent.run {template, prompt, cleanup}: an ephemeral instance starts, answers, and goes. */
  async runTemplate(
    template: string,
    prompt: string,
    cleanup = true,
  ): Promise<{ response: string; instanceName: string; artifacts: string[] }> {
    const instanceName = `${template.replace(/[^A-Za-z0-9._-]/g, "-")}-run-${randomBytes(3).toString("hex")}`;
    this.create(instanceName, template, { workspacePolicy: "ephemeral", launchMode: "one-shot" });
    try {
      await this.start(instanceName);
      const meta = this.instances.get(instanceName);
      const before = new Set(workspaceFiles(meta.workspaceDir));
      const { text } = await promptThread(this.runtime, meta.threadId!, prompt);
      const artifacts = workspaceFiles(meta.workspaceDir)
        .filter((f) => !before.has(f))
        .map((f) => path.join(meta.workspaceDir, f));
      // With cleanup the files go with the workspace: the list still says what the run produced.
      return { response: text, instanceName, artifacts };
    } finally {
      if (cleanup) await this.destroy(instanceName, true);
      else await this.stop(instanceName).catch(() => undefined);
    }
  }

  private async finishOneShot(name: string): Promise<void> {
    const meta = await this.stop(name);
    if (meta.metadata?.autoDestroy === "true" || meta.workspacePolicy === "ephemeral") await this.destroy(name);
  }
}

export function isRunning(meta: AgentInstanceMeta): boolean {
  return meta.status === "running" || meta.status === "starting";
}

/** Files of a workspace (relative, without AgentCraft's metadata), to tell what a run produced. */
function workspaceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(dir, relative))) {
      const rel = path.join(relative, entry);
      if (rel === META_FILE) continue;
      if (statSync(path.join(dir, rel)).isDirectory()) walk(rel);
      else out.push(rel);
    }
  };
  walk("");
  return out.sort();
}
