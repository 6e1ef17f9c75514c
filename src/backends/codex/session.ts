// One `codex app-server` process for one Switchyard thread: JSON-RPC over its stdio, one codex
// thread, and at most one turn at a time. Codex's approval requests go through the turn's
// ctx.approve; its notifications go to the turn's mapper.
import type { ApprovalDecision, BackendSpec, InputPart, TurnError } from "../../domain/model.js";
import type { Logger } from "../../log.js";
import { ConnectionClosedError, RequestTimeoutError, RpcConnection } from "../../rpc/connection.js";
import { ErrorCode, RpcError } from "../../rpc/errors.js";
import { createStdioChannel } from "../../transport/stdio.js";
import type { ApprovalAsk } from "../../tools/tool.js";
import { VERSION } from "../../version.js";
import { inputToText } from "../builtin/history.js";
import { BACKEND_ERRORS, type BackendDeps, type TurnContext, type TurnOutcome } from "../backend.js";
import type { PooledSession } from "../pool.js";
import { AgentProcess, BackendFailure, shellQuote } from "../process.js";
import { delay } from "../../timers.js";
import { CodexTurnMapper, type TurnCompletion } from "./mapper.js";
import {
  ApplyPatchApprovalParams,
  CommandApprovalParams,
  ExecCommandApprovalParams,
  FileChangeApprovalParams,
  METHODS,
  ThreadResponse,
  TurnStartResponse,
  type ApprovalDecisionV2,
  type ReviewDecision,
  type ThreadStartParams,
  type TokenUsageBreakdown,
  type UserInput,
} from "./wire.js";

export type CodexSpec = Extract<BackendSpec, { type: "codex" }>;

export const DEFAULT_CODEX_COMMAND = "codex";
/** How long codex gets to end an interrupted turn before its process is stopped. */
export const INTERRUPT_GRACE_MS = 5_000;
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 60_000;

/** The command line: the spec's args go before `app-server` (codex's global flags, e.g. `-c key=value`). */
export function codexCommand(spec: CodexSpec): { command: string; args: string[] } {
  return { command: spec.command ?? DEFAULT_CODEX_COMMAND, args: [...(spec.args ?? []), "app-server"] };
}

interface ActiveTurn {
  readonly ctx: TurnContext;
  readonly mapper: CodexTurnMapper;
  turnId?: string;
  /** Why the turn is being interrupted, once it is. */
  interrupting?: string;
  interruptSent?: boolean;
  end(completion: TurnCompletion): void;
}

export class CodexSession implements PooledSession {
  private readonly proc: AgentProcess;
  private readonly rpc: RpcConnection;
  private readonly log: Logger;
  /** The codex thread this session drives, once started or resumed. */
  private codexThreadId: string | undefined;
  /** Codex's running token total for the thread, to turn its updates into per-call deltas. */
  private usageTotal: TokenUsageBreakdown | undefined;
  private turn: ActiveTurn | undefined;

  private constructor(
    spec: CodexSpec,
    private readonly workspace: string,
    deps: BackendDeps,
  ) {
    const { command, args } = codexCommand(spec);
    this.log = deps.log.child({ backend: "codex" });
    this.proc = new AgentProcess(
      { command, args, cwd: workspace, ...(spec.env ? { env: spec.env } : {}) },
      { log: deps.log, registryDir: deps.agentRegistryDir, baseEnv: deps.env },
    );
    const channel = createStdioChannel(this.proc.child.stdout, this.proc.child.stdin, { maxMessageBytes: MAX_MESSAGE_BYTES });
    this.rpc = new RpcConnection(
      channel,
      {
        onRequest: (method, params) => this.onRequest(method, params),
        onNotification: (method, params) => this.onNotification(method, params),
      },
      { logger: this.log, jsonrpcMember: "optional", defaultRequestTimeoutMs: REQUEST_TIMEOUT_MS, maxInFlight: 1024 },
    );
  }

  /** Spawns codex and initializes the connection; rejects with a BackendFailure. */
  static async start(spec: CodexSpec, workspace: string, deps: BackendDeps): Promise<CodexSession> {
    const session = new CodexSession(spec, workspace, deps);
    try {
      await session.proc.started();
      await session.request(METHODS.initialize, {
        clientInfo: { name: "switchyard", title: "Switchyard", version: VERSION },
        capabilities: null,
      });
      session.rpc.notify(METHODS.initialized);
      return session;
    } catch (error) {
      const failure = await session.failureOf(error);
      await session.close();
      throw failure;
    }
  }

  get alive(): boolean {
    return this.proc.alive && !this.rpc.closed;
  }

  async close(): Promise<void> {
    this.rpc.close();
    await this.proc.stop();
  }

  /** Runs one turn on the thread's codex thread (started or resumed first when needed). */
  async runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    const { recorder } = ctx;
    const mapper = new CodexTurnMapper(
      { recorder, reportUsage: (u) => ctx.reportUsage(u), reportPlan: (p) => ctx.reportPlan(p), reportDiff: (d) => ctx.reportDiff(d) },
      this.workspace,
      this.usageTotal,
    );
    try {
      const threadId = await this.ensureThread(ctx);
      const completion = await this.turnOn(threadId, ctx, mapper);
      if (completion.status === "completed") return { status: "completed" };
      if (completion.status === "interrupted") return { status: "cancelled", reason: completion.reason };
      recorder.record("error", { code: BACKEND_ERRORS.agent, message: completion.message });
      return { status: "failed", error: { code: BACKEND_ERRORS.agent, message: completion.message } };
    } catch (error) {
      const { turnError } = await this.failureOf(error);
      if (turnError.code === BACKEND_ERRORS.exited || turnError.code === BACKEND_ERRORS.protocol) await this.close();
      recorder.record("error", { code: turnError.code, message: turnError.message });
      return { status: "failed", error: turnError };
    } finally {
      this.turn = undefined;
      this.usageTotal = mapper.usageTotal;
      recorder.closeOpen();
    }
  }

  // ---- thread ---------------------------------------------------------------------------------

  private threadParams(ctx: TurnContext): ThreadStartParams {
    // Codex asks before every patch and every command it does not know to be read-only; once
    // Switchyard has approved, the command runs without codex's own sandbox (as the built-in
    // shell tool does), so it is not refused by a sandbox this host may not have.
    return { cwd: this.workspace, approvalPolicy: "untrusted", sandbox: "danger-full-access", ...(ctx.model ? { model: ctx.model } : {}) };
  }

  private async ensureThread(ctx: TurnContext): Promise<string> {
    if (this.codexThreadId) return this.codexThreadId;
    const recorded = ctx.session?.backend === "codex" ? ctx.session.sessionId : undefined;
    if (recorded) {
      try {
        const resumed = ThreadResponse.parse(
          await this.request(METHODS.threadResume, { ...this.threadParams(ctx), threadId: recorded, excludeTurns: true }),
        );
        this.codexThreadId = resumed.thread.id;
        if (resumed.thread.id !== recorded) ctx.recordSession({ backend: "codex", sessionId: resumed.thread.id });
        return resumed.thread.id;
      } catch (error) {
        if (!(error instanceof RpcError)) throw error;
        ctx.recorder.record("systemNotice", {
          kind: "backendSessionLost",
          message: `Codex could not resume its thread ${recorded} (${error.message}); this turn starts a new Codex thread without the earlier conversation.`,
        });
      }
    }
    const started = ThreadResponse.parse(await this.request(METHODS.threadStart, this.threadParams(ctx)));
    this.codexThreadId = started.thread.id;
    ctx.recordSession({ backend: "codex", sessionId: started.thread.id });
    return started.thread.id;
  }

  // ---- turn -----------------------------------------------------------------------------------

  private async turnOn(threadId: string, ctx: TurnContext, mapper: CodexTurnMapper): Promise<Completion> {
    let end!: (completion: TurnCompletion) => void;
    const ended = new Promise<TurnCompletion>((resolve) => (end = resolve));
    const turn: ActiveTurn = { ctx, mapper, end };
    this.turn = turn;
    const onAbort = (): void => this.interrupt(turn, "interrupted");
    // The process going away ends the turn: as cancelled when it was being interrupted.
    const gone = this.proc.exited.then(async (): Promise<TurnCompletion> => {
      if (turn.interrupting) return { status: "interrupted" };
      throw new BackendFailure(this.proc.failure());
    });
    try {
      const response = TurnStartResponse.parse(
        await Promise.race([
          this.request(METHODS.turnStart, { threadId, input: toCodexInput(ctx.input), ...(ctx.model ? { model: ctx.model } : {}) }),
          gone,
        ]),
      );
      turn.turnId = response.turn.id;
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      if (ctx.signal.aborted || turn.interrupting) this.interrupt(turn, "interrupted");
      const completion = await Promise.race([ended, gone]);
      if (completion.status === "interrupted") return { status: "interrupted", reason: turn.interrupting ?? "interrupted" };
      return completion;
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  /** Asks codex to interrupt the turn; stops the process when codex does not end it in time. */
  private interrupt(turn: ActiveTurn, reason: string): void {
    turn.interrupting ??= reason;
    // Before codex has named the turn, the interrupt is sent as soon as it does.
    if (turn.interruptSent || !turn.turnId || !this.codexThreadId) return;
    turn.interruptSent = true;
    this.request(METHODS.turnInterrupt, { threadId: this.codexThreadId, turnId: turn.turnId }, INTERRUPT_GRACE_MS).catch((error: unknown) =>
      this.log.debug({ err: error }, "turn/interrupt failed"),
    );
    const timer = setTimeout(() => {
      if (this.turn !== turn) return;
      this.log.warn({ turnId: turn.turnId }, "codex did not end the interrupted turn in time; stopping it");
      turn.end({ status: "interrupted" });
      void this.close();
    }, INTERRUPT_GRACE_MS);
    timer.unref(); // harmless when the turn ended in time: it checks the turn is still current
  }

  // ---- from codex -----------------------------------------------------------------------------

  private onNotification(method: string, params: unknown): void {
    const turn = this.turn;
    if (!turn) return;
    const p = (params ?? {}) as { threadId?: unknown; turnId?: unknown; turn?: { id?: unknown } };
    if (typeof p.threadId === "string" && this.codexThreadId && p.threadId !== this.codexThreadId) return;
    const turnId = typeof p.turnId === "string" ? p.turnId : typeof p.turn?.id === "string" ? p.turn.id : undefined;
    if (turnId && turn.turnId && turnId !== turn.turnId) return;
    const completion = turn.mapper.handle(method, params);
    if (completion) turn.end(completion);
  }

  private async onRequest(method: string, params: unknown): Promise<unknown> {
    const turn = this.turn;
    switch (method) {
      case "item/commandExecution/requestApproval": {
        const p = CommandApprovalParams.parse(params);
        const known = turn?.mapper.command(p.itemId);
        const command = p.command ?? known?.command ?? "";
        const ask: ApprovalAsk = {
          approvalType: "shell",
          operation: command,
          target: p.cwd ?? known?.cwd ?? this.workspace,
          scopeKey: `shell:${command.trim()}`,
          reason: p.reason ?? "Codex wants to run a command.",
        };
        return { decision: v2Decision(await this.approve(turn, ask, p.approvalId ?? p.itemId)) };
      }
      case "item/fileChange/requestApproval": {
        const p = FileChangeApprovalParams.parse(params);
        const paths = (turn?.mapper.fileChanges(p.itemId) ?? []).map((c) => c.path);
        return { decision: v2Decision(await this.approve(turn, this.fileAsk(turn, paths, p.reason ?? p.grantRoot), p.itemId)) };
      }
      case "execCommandApproval": {
        const p = ExecCommandApprovalParams.parse(params);
        const command = p.command.map(shellQuote).join(" ");
        const ask: ApprovalAsk = {
          approvalType: "shell",
          operation: command,
          target: p.cwd,
          scopeKey: `shell:${command.trim()}`,
          reason: p.reason ?? "Codex wants to run a command.",
        };
        return { decision: reviewDecision(await this.approve(turn, ask, p.callId)) };
      }
      case "applyPatchApproval": {
        const p = ApplyPatchApprovalParams.parse(params);
        return { decision: reviewDecision(await this.approve(turn, this.fileAsk(turn, Object.keys(p.fileChanges), p.reason), p.callId)) };
      }
      // Requests Switchyard has no way to put to its clients: refused, so codex goes on without.
      case "item/permissions/requestApproval":
        return { permissions: {}, scope: "turn" };
      case "item/tool/requestUserInput":
        return { answers: {} };
      case "mcpServer/elicitation/request":
        return { action: "decline", content: null, _meta: null };
      case "item/tool/call":
        return { contentItems: [{ type: "inputText", text: "Switchyard does not provide client-side tools." }], success: false };
      default:
        throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${method}`);
    }
  }

  private fileAsk(turn: ActiveTurn | undefined, paths: string[], reason: string | null | undefined): ApprovalAsk {
    const rel = paths.map((p) => turn?.mapper.relative(p) ?? p);
    return {
      approvalType: "file",
      operation: rel.length ? `edit ${rel.join(", ")}` : "edit files",
      target: paths.length === 1 ? absolute(this.workspace, paths[0]!) : this.workspace,
      scopeKey: `file:${rel.join(",")}`,
      reason: reason ?? "Codex wants to change files.",
    };
  }

  private async approve(turn: ActiveTurn | undefined, ask: ApprovalAsk, callId: string): Promise<ApprovalDecision> {
    // A request outside a turn (or after it ended) has nobody to ask.
    if (!turn || this.turn !== turn) return "decline";
    const decision = await turn.ctx.approve(ask, callId);
    if (decision === "cancel") this.interrupt(turn, "approvalCancelled");
    return decision;
  }

  // ---- helpers --------------------------------------------------------------------------------

  private request(method: string, params: unknown, timeoutMs?: number): Promise<unknown> {
    return this.rpc.request(method, params, timeoutMs === undefined ? {} : { timeoutMs });
  }

  /** The BackendFailure an error amounts to: the process's own story when it is gone. */
  private async failureOf(error: unknown): Promise<BackendFailure> {
    if (error instanceof BackendFailure) return error;
    if (error instanceof ConnectionClosedError || !this.proc.alive) {
      // The connection closes with the process's stdout, a moment before its exit is reported.
      const exited = await Promise.race([this.proc.exited.then(() => true), delay(2_000).then(() => false)]);
      if (exited) return new BackendFailure(this.proc.failure());
      return new BackendFailure({ code: BACKEND_ERRORS.exited, message: `Codex closed its output. ${this.proc.stderrTail()}`.trim() });
    }
    const turnError: TurnError =
      error instanceof RpcError
        ? { code: BACKEND_ERRORS.protocol, message: `Codex answered with an error (${error.code}): ${error.message}` }
        : error instanceof RequestTimeoutError
          ? { code: BACKEND_ERRORS.protocol, message: `Codex did not answer: ${error.message}` }
          : {
              code: BACKEND_ERRORS.protocol,
              message: `Codex sent something unexpected: ${error instanceof Error ? error.message : String(error)}`,
            };
    return new BackendFailure(turnError);
  }
}

type Completion = { status: "completed" } | { status: "interrupted"; reason: string } | { status: "failed"; message: string };

function toCodexInput(input: InputPart[]): UserInput[] {
  const parts: UserInput[] = [];
  let text: InputPart[] = [];
  const flush = (): void => {
    if (text.length) parts.push({ type: "text", text: inputToText(text), text_elements: [] });
    text = [];
  };
  for (const part of input) {
    if (part.type === "image") {
      flush();
      parts.push({ type: "image", url: part.url });
    } else if (part.type === "localImage") {
      flush();
      parts.push({ type: "localImage", path: part.path });
    } else {
      text.push(part);
    }
  }
  flush();
  return parts;
}

function v2Decision(decision: ApprovalDecision): ApprovalDecisionV2 {
  // Switchyard remembers "always" itself; for codex it is the closest it has, the session.
  return decision === "acceptAlways" ? "acceptForSession" : decision;
}

function reviewDecision(decision: ApprovalDecision): ReviewDecision {
  switch (decision) {
    case "accept":
      return "approved";
    case "acceptForSession":
    case "acceptAlways":
      return "approved_for_session";
    case "decline":
      return { denied: { rejection: "The user declined this action." } };
    case "cancel":
      return "abort";
  }
}

function absolute(workspace: string, file: string): string {
  return file.startsWith("/") ? file : `${workspace.replace(/\/$/, "")}/${file}`;
}
