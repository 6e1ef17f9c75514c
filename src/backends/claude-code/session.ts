// One Claude Code process (`claude -p` in stream-json mode): writes JSON lines to its stdin,
// reads JSON lines from its stdout, and speaks the stdio control protocol (our `initialize` and
// `interrupt` requests, its `can_use_tool` requests). A turn attaches handlers while it runs.
import readline from "node:readline";
import type { Logger } from "../../log.js";
import { BACKEND_ERRORS } from "../backend.js";
import type { PooledSession } from "../pool.js";
import { AgentProcess, BackendFailure, type AgentCommand } from "../process.js";
import { isObject, type CliMessage, type ControlRequest, type ControlResponse, type PermissionResult } from "./wire.js";

/** How long the CLI may take to answer `initialize` (it loads settings, plugins, the session). */
const HANDSHAKE_TIMEOUT_MS = 60_000;

/** `--resume` named a session the CLI does not have (deleted, another machine, another HOME). */
export class SessionLostError extends Error {
  constructor(
    readonly sessionId: string,
    readonly detail: string,
  ) {
    super(`Claude Code could not resume session ${sessionId}: ${detail}`);
    this.name = "SessionLostError";
  }
}

export interface TurnHandlers {
  message(message: CliMessage): void;
  controlRequest(request: ControlRequest): void;
  /** The process exited while the handlers were attached. */
  exit(): void;
}

export interface SessionOptions {
  command: AgentCommand;
  /** The session to resume (`--resume`). */
  resume?: string;
  log: Logger;
  registryDir?: string;
  baseEnv?: NodeJS.ProcessEnv;
}

export class ClaudeSession implements PooledSession {
  /** The CLI's session id, once it said (system init). */
  sessionId: string | undefined;
  /**
   * The session's running cost total after the last result; undefined when unknown (a resumed
   * session's total includes its earlier life, which this process did not see).
   */
  costTotal: number | undefined;
  private readonly proc: AgentProcess;
  private readonly log: Logger;
  private handlers: TurnHandlers | undefined;
  private readonly pending = new Map<string, { resolve(response: Record<string, unknown>): void; reject(error: Error): void }>();
  private nextRequest = 0;
  /** Non-JSON lines on stdout, kept for the error message if the process then dies. */
  private noise: string[] = [];
  private killed = false;

  private constructor(readonly options: SessionOptions) {
    this.log = options.log;
    this.proc = new AgentProcess(options.command, {
      log: options.log,
      ...(options.registryDir ? { registryDir: options.registryDir } : {}),
      ...(options.baseEnv ? { baseEnv: options.baseEnv } : {}),
    });
    this.costTotal = options.resume ? undefined : 0;
    if (options.resume) this.sessionId = options.resume;
    const lines = readline.createInterface({ input: this.proc.child.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => this.onLine(line));
    void this.proc.exited.then(() => {
      for (const waiter of this.pending.values()) waiter.reject(new BackendFailure(this.failure()));
      this.pending.clear();
      this.handlers?.exit();
    });
  }

  /**
   * Spawns the CLI and waits for its answer to `initialize`. Rejects with BackendFailure when
   * it cannot start or dies, and with SessionLostError when the session to resume is unknown.
   */
  static async start(options: SessionOptions, signal?: AbortSignal): Promise<ClaudeSession> {
    const session = new ClaudeSession(options);
    try {
      await session.proc.started();
      await session.handshake(signal);
      return session;
    } catch (error) {
      await session.close();
      throw error;
    }
  }

  get alive(): boolean {
    return this.proc.alive && !this.killed;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Why the process is gone, as a turn error (with non-JSON stdout, if any, after stderr). */
  failure(): ReturnType<AgentProcess["failure"]> {
    const failure = this.proc.failure();
    if (this.noise.length === 0 || failure.code !== BACKEND_ERRORS.exited) return failure;
    return { ...failure, message: `${failure.message}\nUnparsed output on stdout:\n${this.noise.join("\n")}` };
  }

  /** Routes messages and permission requests to one turn until the returned function is called. */
  attach(handlers: TurnHandlers): () => void {
    this.handlers = handlers;
    return () => {
      if (this.handlers === handlers) this.handlers = undefined;
    };
  }

  send(message: unknown): void {
    if (!this.proc.alive) return;
    this.proc.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  /** Sends a control request and resolves with the CLI's response. */
  request(subtype: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const requestId = `switchyard-${++this.nextRequest}`;
    return new Promise((resolve, reject) => {
      if (!this.proc.alive) return reject(new BackendFailure(this.failure()));
      this.pending.set(requestId, { resolve, reject });
      this.send({ type: "control_request", request_id: requestId, request: { subtype, ...fields } });
    });
  }

  /** Answers one of the CLI's control requests. */
  respond(requestId: string, response: PermissionResult | { error: string }): void {
    const body: ControlResponse["response"] =
      "error" in response
        ? { subtype: "error", request_id: requestId, error: response.error }
        : { subtype: "success", request_id: requestId, response: { ...response } };
    this.send({ type: "control_response", response: body });
  }

  /** Kills the process group now (a turn that would not stop); a later turn resumes the session. */
  kill(): Promise<void> {
    this.killed = true;
    return this.proc.stop(500);
  }

  /** Ends the session: stdin closed, then the process group stopped. */
  async close(): Promise<void> {
    await this.proc.stop();
  }

  private onLine(line: string): void {
    const text = line.trim();
    if (!text) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      // Not a protocol message: warnings some launchers print on stdout. Skipping them keeps a
      // working turn alive; if the agent is really broken it exits or never answers, and both
      // end the turn (the lines are then part of the error message).
      this.noise = [...this.noise, text.slice(0, 500)].slice(-5);
      this.log.warn({ line: text.slice(0, 500) }, "claude-code: skipped a non-JSON line on stdout");
      return;
    }
    if (!isObject(message) || typeof message.type !== "string") {
      this.log.warn({ line: text.slice(0, 500) }, "claude-code: skipped a line that is not a message");
      return;
    }
    const msg = message as CliMessage;
    if (msg.type === "control_response") return this.onControlResponse(msg as ControlResponse);
    if (msg.type === "control_request") {
      const request = msg as ControlRequest;
      if (this.handlers) this.handlers.controlRequest(request);
      else this.respond(request.request_id, { error: "No turn is running." });
      return;
    }
    if (msg.type === "system" && "subtype" in msg && msg.subtype === "init" && typeof msg.session_id === "string") {
      this.sessionId = msg.session_id;
    }
    this.handlers?.message(msg);
  }

  private onControlResponse(message: ControlResponse): void {
    const response = isObject(message.response) ? message.response : undefined;
    const waiter = response && this.pending.get(String(response.request_id));
    if (!response || !waiter) return;
    this.pending.delete(String(response.request_id));
    if (response.subtype === "success") waiter.resolve(isObject(response.response) ? response.response : {});
    else waiter.reject(new Error("error" in response ? String(response.error) : "control request failed"));
  }

  /**
   * `initialize`: the CLI answers once it is ready. A session it cannot resume makes it print
   * an error result ("No conversation found with session ID: ...") and exit instead.
   */
  private handshake(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (error?: Error): void => {
        clearTimeout(timer);
        detach();
        signal?.removeEventListener("abort", onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onAbort = (): void => done(new Error("aborted"));
      const detach = this.attach({
        message: (message) => {
          if (message.type !== "result") return;
          const result = message as Extract<CliMessage, { type: "result" }>;
          const detail = (Array.isArray(result.errors) ? result.errors.join("; ") : "") || String(result.result ?? result.subtype);
          if (this.options.resume) done(new SessionLostError(this.options.resume, detail));
          else done(new BackendFailure({ code: BACKEND_ERRORS.agent, message: `Claude Code failed to start: ${detail}` }));
        },
        controlRequest: (request) => this.respond(request.request_id, { error: "No turn is running." }),
        exit: () => done(new BackendFailure(this.failure())),
      });
      timer = setTimeout(
        () =>
          done(
            new BackendFailure({
              code: BACKEND_ERRORS.protocol,
              message: `Claude Code did not answer "initialize" within ${HANDSHAKE_TIMEOUT_MS / 1000} s.`,
            }),
          ),
        HANDSHAKE_TIMEOUT_MS,
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      this.request("initialize").then(
        () => done(),
        (error: Error) =>
          done(
            error instanceof BackendFailure
              ? error
              : new BackendFailure({ code: BACKEND_ERRORS.protocol, message: `Claude Code refused "initialize": ${error.message}` }),
          ),
      );
    });
  }
}
