// One ACP agent process for one Switchyard thread, driven as an ACP client with the official
// SDK: initialize, one ACP session (new, or loaded after a restart), session/prompt per turn
// and session/cancel to interrupt. The agent's requests are served here: permissions become
// runtime approvals, and files and terminals are served inside the thread's workspace.
import fs from "node:fs/promises";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import type { ApprovalDecision, BackendSpec, InputPart, ItemOf } from "../../domain/model.js";
import type { Logger } from "../../log.js";
import { readThroughEnvironment, writeText } from "../../tools/files.js";
import type { ApprovalAsk } from "../../tools/tool.js";
import { PathEscapeError, Workspace } from "../../tools/workspace.js";
import { fileApproval } from "../../tools/write-file.js";
import { VERSION } from "../../version.js";
import { inputToText } from "../builtin/history.js";
import { BACKEND_ERRORS, type BackendDeps, type TurnContext, type TurnOutcome } from "../backend.js";
import type { PooledSession } from "../pool.js";
import { AgentProcess, BackendFailure } from "../process.js";
import { delay } from "../../timers.js";
import { AcpTurnMapper, commandOf } from "./mapper.js";
import { AgentTerminals } from "./terminals.js";

export type AcpSpec = Extract<BackendSpec, { type: "acp" }>;

/** How long the agent gets to end a cancelled prompt before its process is stopped. */
export const CANCEL_GRACE_MS = 5_000;
const REQUEST_TIMEOUT_MS = 60_000;

/** What session/prompt answers; `usage` is in the unstable schema, which agents may already send. */
type PromptResponse = acp.PromptResponse & {
  usage?: {
    inputTokens: number;
    outputTokens: number;
    totalTokens: number;
    thoughtTokens?: number | null;
    cachedReadTokens?: number | null;
  } | null;
};

interface ActiveTurn {
  readonly ctx: TurnContext;
  readonly mapper: AcpTurnMapper;
  cancelling?: string;
  /** Commands and files the user allowed through a permission request this turn. */
  readonly allowedCommands: Set<string>;
  readonly allowedPaths: Set<string>;
}

export class AcpAgentSession implements PooledSession {
  private readonly proc: AgentProcess;
  private readonly connection: acp.ClientConnection;
  private readonly log: Logger;
  private readonly workspace: Workspace;
  private readonly terminals: AgentTerminals;
  private agentCapabilities: acp.AgentCapabilities = {};
  /** The agent's name and version, as it gave them at initialize. */
  agentInfo: acp.Implementation | undefined;
  private sessionId: string | undefined;
  private turn: ActiveTurn | undefined;
  /** The session's cumulative cost before the current turn (usage_update reports a running total). */
  private costUsd: number | undefined;
  private closing = false;

  private constructor(spec: AcpSpec, workspacePath: string, deps: Pick<BackendDeps, "log" | "agentRegistryDir" | "env">) {
    this.log = deps.log.child({ backend: "acp" });
    this.workspace = new Workspace(workspacePath);
    this.terminals = new AgentTerminals(this.workspace, () => this.turn?.ctx.environment());
    this.proc = new AgentProcess(
      { command: spec.command, args: spec.args ?? [], cwd: this.workspace.root, ...(spec.env ? { env: spec.env } : {}) },
      { log: deps.log, registryDir: deps.agentRegistryDir, baseEnv: deps.env },
    );
    const stream = acp.ndJsonStream(
      Writable.toWeb(this.proc.child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(this.proc.child.stdout) as ReadableStream<Uint8Array>,
    );
    this.connection = this.clientApp().connect(stream);
  }

  /** Spawns the agent and initializes the connection; rejects with a BackendFailure. */
  static async start(
    spec: AcpSpec,
    workspacePath: string,
    deps: Pick<BackendDeps, "log" | "agentRegistryDir" | "env">,
  ): Promise<AcpAgentSession> {
    const session = new AcpAgentSession(spec, workspacePath, deps);
    try {
      await session.proc.started();
      const init = await session.request(() =>
        session.connection.agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
          clientInfo: { name: "switchyard", title: "Switchyard", version: VERSION },
        }),
      );
      session.agentCapabilities = init.agentCapabilities ?? {};
      session.agentInfo = init.agentInfo ?? undefined;
      return session;
    } catch (error) {
      const failure = await session.failureOf(error);
      await session.close();
      throw failure;
    }
  }

  get capabilities(): acp.AgentCapabilities {
    return this.agentCapabilities;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get alive(): boolean {
    return this.proc.alive && !this.closing;
  }

  async close(): Promise<void> {
    // Not alive from now on, though the process takes a moment to exit: the pool starts a new one.
    this.closing = true;
    this.terminals.releaseAll();
    this.connection.close();
    await this.proc.stop();
  }

  /** Runs one turn on the thread's ACP session (created or loaded first when needed). */
  async runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    const { recorder } = ctx;
    const mapper = new AcpTurnMapper(
      { recorder, reportPlan: (p) => ctx.reportPlan(p), reportDiff: (d) => ctx.reportDiff(d) },
      this.workspace.root,
      (terminalId, item) => this.terminals.follow(terminalId, (chunk) => appendOutput(ctx, item, chunk)),
    );
    mapper.costUsd = this.costUsd;
    const costBefore = this.costUsd;
    try {
      const sessionId = await this.ensureSession(ctx);
      // Interrupted while the agent was starting: no prompt is sent at all.
      if (ctx.signal.aborted) return { status: "cancelled", reason: "interrupted" };
      const turn: ActiveTurn = { ctx, mapper, allowedCommands: new Set(), allowedPaths: new Set() };
      this.turn = turn;
      const response = await this.prompt(sessionId, turn);
      this.reportUsage(ctx, response, costBefore, mapper.costUsd);
      if (response.stopReason === "cancelled" || turn.cancelling) return { status: "cancelled", reason: turn.cancelling ?? "interrupted" };
      if (response.stopReason === "refusal") {
        const error = { code: BACKEND_ERRORS.agent, message: "The agent refused to continue." };
        recorder.record("error", error);
        return { status: "failed", error };
      }
      return { status: "completed" };
    } catch (error) {
      // A cancelled prompt the agent did not end in time: its process was stopped.
      if (this.turn?.cancelling) return { status: "cancelled", reason: this.turn.cancelling };
      const { turnError } = await this.failureOf(error);
      if (turnError.code === BACKEND_ERRORS.exited || turnError.code === BACKEND_ERRORS.protocol) await this.close();
      mapper.finish(); // open items close before the error that ended them
      recorder.record("error", { code: turnError.code, message: turnError.message });
      return { status: "failed", error: turnError };
    } finally {
      this.costUsd = mapper.costUsd;
      this.turn = undefined;
      this.terminals.releaseAll();
      mapper.finish();
      recorder.closeOpen();
    }
  }

  // ---- session --------------------------------------------------------------------------------

  private async ensureSession(ctx: TurnContext): Promise<string> {
    if (this.sessionId) return this.sessionId;
    const recorded = ctx.session?.backend === "acp" ? ctx.session.sessionId : undefined;
    if (recorded) {
      if (this.agentCapabilities.loadSession) {
        try {
          // The agent replays the history as session/update before it answers; updates of a
          // session other than this.sessionId are not recorded, so the history is not recorded
          // again. The SDK hands each message to its handler a few microtasks after reading it:
          // the session is named only a macrotask later, once every update read before the
          // answer has been handled (and ignored).
          await this.request(() =>
            this.connection.agent.request(acp.methods.agent.session.load, {
              sessionId: recorded,
              cwd: this.workspace.root,
              mcpServers: [],
            }),
          );
          await new Promise((resolve) => setImmediate(resolve));
          this.sessionId = recorded;
          return recorded;
        } catch (error) {
          if (!(error instanceof acp.RequestError)) throw error;
          this.lost(ctx, recorded, error.message);
        }
      } else {
        this.lost(ctx, recorded, "the agent cannot load sessions");
      }
    }
    const created = await this.request(() =>
      this.connection.agent.request(acp.methods.agent.session.new, { cwd: this.workspace.root, mcpServers: [] }),
    );
    this.sessionId = created.sessionId;
    ctx.recordSession({ backend: "acp", sessionId: created.sessionId });
    return created.sessionId;
  }

  private lost(ctx: TurnContext, sessionId: string, why: string): void {
    ctx.recorder.record("systemNotice", {
      kind: "backendSessionLost",
      message: `The ACP agent could not load its session ${sessionId} (${why}); this turn starts a new session without the earlier conversation.`,
    });
  }

  // ---- turn -----------------------------------------------------------------------------------

  private async prompt(sessionId: string, turn: ActiveTurn): Promise<PromptResponse> {
    const { ctx } = turn;
    const onAbort = (): void => this.cancel(turn, "interrupted");
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    // The process going away ends the turn: as cancelled when it was being cancelled.
    const gone = this.proc.exited.then((): PromptResponse => {
      if (turn.cancelling) return { stopReason: "cancelled" };
      throw new BackendFailure(this.proc.failure());
    });
    gone.catch(() => {}); // reported through the race below, or not at all once the prompt answered
    try {
      const prompt = this.connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: this.toPrompt(ctx.input),
      }) as Promise<PromptResponse>;
      return await Promise.race([prompt, gone]);
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  /** Sends session/cancel; stops the process when the agent does not end the prompt in time. */
  private cancel(turn: ActiveTurn, reason: string): void {
    if (turn.cancelling || !this.sessionId) return;
    turn.cancelling = reason;
    this.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.sessionId }).catch(() => {});
    const timer = setTimeout(() => {
      if (this.turn !== turn) return;
      this.log.warn("the ACP agent did not end the cancelled prompt in time; stopping it");
      void this.close();
    }, CANCEL_GRACE_MS);
    timer.unref();
  }

  private toPrompt(input: InputPart[]): acp.ContentBlock[] {
    const images = this.agentCapabilities.promptCapabilities?.image === true;
    const blocks: acp.ContentBlock[] = [];
    let text: InputPart[] = [];
    const flush = (): void => {
      if (text.length) blocks.push({ type: "text", text: inputToText(text) });
      text = [];
    };
    for (const part of input) {
      const data = part.type === "image" && images ? /^data:([^;,]+);base64,(.*)$/s.exec(part.url) : null;
      if (data) {
        flush();
        blocks.push({ type: "image", mimeType: data[1]!, data: data[2]! });
      } else if (part.type === "fileRef") {
        flush();
        const file = this.workspace.resolve(part.path);
        blocks.push({ type: "resource_link", uri: `file://${file}`, name: this.workspace.relative(file) });
      } else {
        text.push(part);
      }
    }
    flush();
    return blocks;
  }

  private reportUsage(ctx: TurnContext, response: PromptResponse, costBefore: number | undefined, costAfter: number | undefined): void {
    const cost = costAfter !== undefined ? costAfter - (costBefore ?? 0) : undefined;
    const usage = response.usage;
    if (!usage && !cost) return;
    ctx.reportUsage({
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      totalTokens: usage?.totalTokens ?? 0,
      ...(usage?.cachedReadTokens ? { cachedInputTokens: usage.cachedReadTokens } : {}),
      ...(usage?.thoughtTokens ? { reasoningTokens: usage.thoughtTokens } : {}),
      ...(cost ? { costUsd: cost } : {}),
    });
  }

  // ---- from the agent -------------------------------------------------------------------------

  private clientApp(): acp.ClientApp {
    return acp
      .client({ name: "switchyard" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        if (params.sessionId === this.sessionId) this.turn?.mapper.handle(params.update);
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => this.permission(params))
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => this.readTextFile(params))
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => this.writeTextFile(params))
      .onRequest(acp.methods.client.terminal.create, ({ params }) => this.createTerminal(params))
      .onRequest(acp.methods.client.terminal.output, ({ params }) => this.terminals.output(params.terminalId))
      .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => this.terminals.waitForExit(params.terminalId))
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        this.terminals.kill(params.terminalId);
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        this.terminals.release(params.terminalId);
        return {};
      });
  }

  private async permission(params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse> {
    const turn = this.turn;
    // A request outside a turn has nobody to ask.
    if (!turn || params.sessionId !== this.sessionId) return { outcome: { outcome: "cancelled" } };
    const ask = turn.mapper.permissionAsk(params.toolCall);
    const decision = await turn.ctx.approve(ask, params.toolCall.toolCallId);
    if (decision === "cancel") {
      this.cancel(turn, "approvalCancelled");
      return { outcome: { outcome: "cancelled" } };
    }
    if (decision !== "decline") {
      if (ask.approvalType === "file") for (const p of turn.mapper.pathsOf(params.toolCall)) turn.allowedPaths.add(p);
      else turn.allowedCommands.add(commandOf(params.toolCall.rawInput) ?? ask.operation);
    }
    const option = pickOption(params.options, decision);
    return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : { outcome: { outcome: "cancelled" } };
  }

  private resolve(requested: string): string {
    try {
      return this.workspace.resolve(requested);
    } catch (error) {
      if (error instanceof PathEscapeError) throw acp.RequestError.invalidParams(undefined, error.message);
      throw error;
    }
  }

  private async readTextFile(params: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const file = this.resolve(params.path);
    const environment = this.turn?.ctx.environment();
    let content: string | undefined;
    try {
      content = await readThroughEnvironment(environment ? { environment } : {}, file);
      content ??= await fs.readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw acp.RequestError.resourceNotFound(params.path);
      throw error;
    }
    if (params.line == null && params.limit == null) return { content };
    const lines = content.split("\n");
    const start = Math.max(0, (params.line ?? 1) - 1);
    return { content: lines.slice(start, params.limit == null ? undefined : start + params.limit).join("\n") };
  }

  private async writeTextFile(params: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse> {
    const turn = this.turn;
    if (!turn) throw new acp.RequestError(-32000, "No turn is running: Switchyard does not write files for an idle agent.");
    const file = this.resolve(params.path);
    if (!turn.allowedPaths.has(file)) {
      const ask = fileApproval("write", file, this.workspace);
      if (ask) await this.approveOrRefuse(turn, ask, "write");
      turn.allowedPaths.add(file);
    }
    const environment = turn.ctx.environment();
    await writeText(environment ? { environment } : {}, file, params.content);
    return {};
  }

  private async createTerminal(params: acp.CreateTerminalRequest): Promise<acp.CreateTerminalResponse> {
    const turn = this.turn;
    if (!turn) throw new acp.RequestError(-32000, "No turn is running: Switchyard does not run commands for an idle agent.");
    const line = AgentTerminals.commandLine(params);
    // A command the user allowed through the agent's own permission request is not asked again.
    if (!turn.allowedCommands.delete(line)) {
      const ask: ApprovalAsk = {
        approvalType: "shell",
        operation: line,
        target: this.workspace.root,
        scopeKey: `shell:${line.trim()}`,
        reason: "The agent wants to run a command in a terminal.",
      };
      await this.approveOrRefuse(turn, ask, "run");
    }
    return { terminalId: this.terminals.create(params) };
  }

  private async approveOrRefuse(turn: ActiveTurn, ask: ApprovalAsk, verb: string): Promise<void> {
    const decision = await turn.ctx.approve(ask, `${verb}_${Date.now().toString(36)}`);
    if (decision === "cancel") this.cancel(turn, "approvalCancelled");
    if (decision === "decline" || decision === "cancel") {
      throw new acp.RequestError(-32000, `The user declined: ${ask.operation}`);
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** A set-up request to the agent: fails when the process exits or does not answer in time. */
  private async request<T>(send: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const failed = new Promise<never>((_, reject) => {
      this.proc.exited.then(() => reject(new BackendFailure(this.proc.failure())), reject);
      timer = setTimeout(
        () =>
          reject(
            new BackendFailure({ code: BACKEND_ERRORS.protocol, message: `The ACP agent did not answer within ${REQUEST_TIMEOUT_MS} ms.` }),
          ),
        REQUEST_TIMEOUT_MS,
      );
    });
    failed.catch(() => {});
    try {
      return await Promise.race([send(), failed]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The BackendFailure an error amounts to: the process's own story when it is gone. */
  private async failureOf(error: unknown): Promise<BackendFailure> {
    if (error instanceof BackendFailure) return error;
    if (!(error instanceof acp.RequestError)) {
      // A connection that broke is the process going away: its exit is reported a moment later.
      const exited = await Promise.race([this.proc.exited.then(() => true), delay(2_000).then(() => false)]);
      if (exited) return new BackendFailure(this.proc.failure());
    }
    const message =
      error instanceof acp.RequestError
        ? `The ACP agent answered with an error (${error.code}): ${error.message}${error.data === undefined ? "" : ` ${JSON.stringify(error.data)}`}`
        : `The ACP agent sent something unexpected: ${error instanceof Error ? error.message : String(error)}`;
    return new BackendFailure({ code: error instanceof acp.RequestError ? BACKEND_ERRORS.agent : BACKEND_ERRORS.protocol, message });
  }
}

/** The permission option for a runtime decision, by its kind (allow/reject, once/always). */
export function pickOption(options: acp.PermissionOption[], decision: ApprovalDecision): acp.PermissionOption | undefined {
  const byKind = (...kinds: acp.PermissionOptionKind[]): acp.PermissionOption | undefined =>
    kinds.map((k) => options.find((o) => o.kind === k)).find(Boolean);
  switch (decision) {
    case "accept":
      return byKind("allow_once", "allow_always");
    case "acceptForSession":
    case "acceptAlways":
      return byKind("allow_always", "allow_once");
    case "decline":
      return byKind("reject_once", "reject_always");
    case "cancel":
      return undefined;
  }
}

function appendOutput(ctx: TurnContext, item: ItemOf<"commandExecution">, chunk: string): void {
  if (item.status === "completed") return;
  item.payload.output += chunk;
  ctx.recorder.delta(item, "commandOutput", chunk, "stdout");
}
