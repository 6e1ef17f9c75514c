// The terminals an ACP agent asks its client for (terminal/create, output, wait_for_exit, kill,
// release), served with the bash tool's machinery: confined to the workspace, its own process
// group, bounded output, and the thread's tool environment when a client attached one.
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { newId } from "../../ids.js";
import { bashTool } from "../../tools/bash.js";
import { MAX_OUTPUT_BYTES } from "../../tools/files.js";
import type { ToolEnvironment, ToolResult } from "../../tools/tool.js";
import { PathEscapeError, type Workspace } from "../../tools/workspace.js";
import { shellQuote } from "../process.js";

interface Terminal {
  readonly commandLine: string;
  output: string;
  truncated: boolean;
  readonly limit: number;
  exit?: acp.TerminalExitStatus;
  readonly done: Promise<acp.TerminalExitStatus>;
  readonly abort: AbortController;
  /** Where output goes as it arrives, once a tool call shows the terminal. */
  listener?: (chunk: string) => void;
}

export class AgentTerminals {
  private readonly terminals = new Map<string, Terminal>();

  constructor(
    private readonly workspace: Workspace,
    private readonly environment: () => ToolEnvironment | undefined,
  ) {}

  /** The command line a terminal/create request runs, as it is shown and approved. */
  static commandLine(params: Pick<acp.CreateTerminalRequest, "command" | "args">): string {
    const args = params.args ?? [];
    // `bash -c "<line>"` is how agents run a shell line: show the line itself.
    if (path.basename(params.command) === "bash" && args.length === 2 && args[0] === "-c") return args[1]!;
    return [params.command, ...args].map(shellQuote).join(" ");
  }

  /** Starts the command (already approved); throws a RequestError for a cwd outside the workspace. */
  create(params: acp.CreateTerminalRequest): string {
    let cwd = this.workspace.root;
    if (params.cwd) {
      try {
        cwd = this.workspace.resolve(params.cwd);
      } catch (error) {
        if (error instanceof PathEscapeError) throw acp.RequestError.invalidParams(undefined, error.message);
        throw error;
      }
    }
    const commandLine = AgentTerminals.commandLine(params);
    const env = (params.env ?? []).map((v) => shellQuote(`${v.name}=${v.value}`));
    const line = [
      ...(cwd !== this.workspace.root ? [`cd ${shellQuote(cwd)} &&`] : []),
      ...(env.length ? ["env", ...env] : []),
      [params.command, ...(params.args ?? [])].map(shellQuote).join(" "),
    ].join(" ");
    const id = newId("term");
    const abort = new AbortController();
    const environment = this.environment();
    let terminal!: Terminal;
    const done = bashTool
      .execute(
        { command: line },
        {
          workspace: this.workspace,
          callId: id,
          ...(environment ? { environment } : {}),
          signal: abort.signal,
          emitOutput: (chunk: string) => append(terminal, chunk),
          recordFileChange: () => {},
          updatePlan: () => {},
          commandTimeoutMs: Number.POSITIVE_INFINITY,
        },
      )
      .then((result: ToolResult): acp.TerminalExitStatus => {
        terminal.exit = { exitCode: result.exitCode ?? null, signal: result.interrupted ? "SIGTERM" : null };
        return terminal.exit;
      });
    terminal = { commandLine, output: "", truncated: false, limit: params.outputByteLimit ?? MAX_OUTPUT_BYTES, done, abort };
    this.terminals.set(id, terminal);
    return id;
  }

  output(id: string): acp.TerminalOutputResponse {
    const t = this.get(id);
    return { output: t.output, truncated: t.truncated, ...(t.exit ? { exitStatus: t.exit } : {}) };
  }

  async waitForExit(id: string): Promise<acp.WaitForTerminalExitResponse> {
    return this.get(id).done;
  }

  kill(id: string): void {
    this.get(id).abort.abort();
  }

  release(id: string): void {
    const t = this.terminals.get(id);
    if (!t) return;
    t.abort.abort();
    this.terminals.delete(id);
  }

  /** Sends the terminal's output so far, and from now on each chunk as it arrives, to `listener`. */
  follow(id: string, listener: (chunk: string) => void): void {
    const t = this.terminals.get(id);
    if (!t) return;
    if (t.output) listener(t.output);
    t.listener = listener;
  }

  /** Kills every terminal (the turn ended or the session closes). */
  releaseAll(): void {
    for (const id of [...this.terminals.keys()]) this.release(id);
  }

  private get(id: string): Terminal {
    const t = this.terminals.get(id);
    if (!t) throw acp.RequestError.resourceNotFound(id);
    return t;
  }
}

/** Keeps the newest `limit` characters, as ACP asks (truncated from the beginning). */
function append(t: Terminal, chunk: string): void {
  t.listener?.(chunk);
  t.output += chunk;
  if (t.output.length > t.limit) {
    t.output = t.output.slice(t.output.length - t.limit);
    t.truncated = true;
  }
}
