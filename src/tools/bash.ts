// bash: runs a shell command in the workspace, streaming its output. The command gets its own
// process group (detached) so interrupting or timing out kills everything it started.
import { spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { defineTool, type ToolResult } from "./tool.js";
import { MAX_OUTPUT_BYTES } from "./files.js";
import { setBoundedTimeout } from "../timers.js";

/** Time between SIGTERM and SIGKILL when stopping a command. */
const KILL_GRACE_MS = 2000;
/**
 * After the shell exits, how long to wait for its output pipes to close. A background job
 * (`server &`) keeps them open forever; we stop waiting rather than hang the turn.
 */
const PIPE_CLOSE_GRACE_MS = 300;

export const bashTool = defineTool({
  name: "bash",
  description:
    "Run a shell command with bash in the workspace root and return its combined stdout/stderr and exit code. " +
    "Non-interactive: stdin is closed. Long-running commands are killed at the timeout.",
  kind: "shell",
  input: z.object({
    command: z.string().min(1).describe("The command line, run with `bash -c`."),
    timeoutMs: z.number().int().positive().optional().describe("Kill the command after this many milliseconds."),
  }),
  approval(input, { workspace }) {
    return {
      approvalType: "shell",
      operation: input.command,
      target: workspace.root,
      // The exact command: a grant for "git status" must not also let "git push --force" run.
      scopeKey: `shell:${input.command.trim()}`,
      reason: "Agent wants to execute a shell command.",
    };
  },
  execute(input, ctx) {
    if (ctx.signal.aborted) {
      return Promise.resolve({ output: "Command interrupted before it started.", interrupted: true, isError: true });
    }
    const timeoutMs = input.timeoutMs ?? ctx.commandTimeoutMs;
    const runCommand = ctx.environment?.runCommand;
    if (runCommand) {
      // The environment (e.g. the client's terminal) runs it; the output is recorded when it ends.
      return runCommand({ callId: ctx.callId, command: input.command, cwd: ctx.workspace.root, timeoutMs, signal: ctx.signal }).then(
        (result) => {
          if (result.output) ctx.emitOutput(result.output, "stdout");
          const stopReason = result.timedOut ? "timeout" : result.interrupted ? "abort" : undefined;
          const signal = (result.signal ?? null) as NodeJS.Signals | null;
          return buildResult(result.output, { code: result.exitCode, signal }, stopReason, timeoutMs);
        },
        (error: unknown) => ({
          output: `Failed to run the command: ${error instanceof Error ? error.message : String(error)}`,
          isError: true,
          exitCode: null,
        }),
      );
    }

    return new Promise<ToolResult>((resolve) => {
      const child = spawn("bash", ["-c", input.command], {
        cwd: ctx.workspace.root,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        // Pagers would wait for a terminal that is not there.
        env: { ...process.env, PAGER: "cat", GIT_PAGER: "cat" },
      });
      const output = new BoundedOutput(MAX_OUTPUT_BYTES);
      let stopReason: "timeout" | "abort" | undefined;
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      const timers: NodeJS.Timeout[] = [];
      let settled = false;

      for (const stream of ["stdout", "stderr"] as const) {
        const decoder = new StringDecoder("utf8"); // never split a multi-byte character
        const emit = (text: string) => {
          if (!text) return;
          output.push(text);
          ctx.emitOutput(text, stream);
        };
        child[stream].on("data", (chunk: Buffer) => emit(decoder.write(chunk)));
        child[stream].on("end", () => emit(decoder.end()));
      }

      const killGroup = (signal: NodeJS.Signals) => {
        try {
          process.kill(-child.pid!, signal);
        } catch {
          // ESRCH: the group is already gone.
        }
      };
      const stop = (reason: "timeout" | "abort") => {
        if (stopReason || settled) return;
        stopReason = reason;
        killGroup("SIGTERM");
        timers.push(setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS));
        // Whatever survives SIGKILL (a process that left the group) must not hang the turn.
        timers.push(setTimeout(finish, KILL_GRACE_MS + PIPE_CLOSE_GRACE_MS));
      };
      const onAbort = () => stop("abort");
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      if (Number.isFinite(timeoutMs) && timeoutMs > 0) {
        // setTimeout fires at once for delays above 2^31-1 ms, so clamp.
        timers.push(setBoundedTimeout(() => stop("timeout"), timeoutMs));
      }

      const settle = (result: ToolResult) => {
        if (settled) return;
        settled = true;
        for (const timer of timers) clearTimeout(timer);
        ctx.signal.removeEventListener("abort", onAbort);
        child.stdout.destroy();
        child.stderr.destroy();
        resolve(result);
      };
      function finish() {
        settle(buildResult(output.toString(), exit, stopReason, timeoutMs));
      }

      child.on("error", (error) => {
        settle({ output: `Failed to start bash: ${error.message}`, isError: true, exitCode: null });
      });
      child.on("exit", (code, signal) => {
        exit = { code, signal };
        timers.push(setTimeout(finish, PIPE_CLOSE_GRACE_MS));
      });
      child.on("close", finish);
    });
  },
});

function buildResult(
  text: string,
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined,
  stopReason: "timeout" | "abort" | undefined,
  timeoutMs: number,
): ToolResult {
  const exitCode = exit?.code ?? null;
  const status =
    stopReason === "timeout"
      ? `Command timed out after ${timeoutMs} ms and was killed.`
      : stopReason === "abort"
        ? "Command interrupted."
        : exit?.signal
          ? `terminated by signal ${exit.signal}`
          : `exit code ${exitCode}`;
  const body = text && !text.endsWith("\n") ? `${text}\n` : text;
  return {
    output: body + status,
    exitCode,
    isError: exitCode !== 0,
    ...(stopReason === "timeout" ? { timedOut: true } : {}),
    ...(stopReason === "abort" ? { interrupted: true } : {}),
  };
}

/**
 * Keeps the first and last halves of a stream once it exceeds the cap: the start shows what
 * ran, the end holds errors and summaries. Measured in characters, which bounds bytes closely enough.
 */
class BoundedOutput {
  private head = "";
  private tail = "";
  private dropped = 0;
  private readonly half: number;

  constructor(max: number) {
    this.half = Math.floor(max / 2);
  }

  push(text: string): void {
    if (this.head.length < this.half) {
      const take = text.slice(0, this.half - this.head.length);
      this.head += take;
      text = text.slice(take.length);
    }
    if (!text) return;
    this.tail += text;
    if (this.tail.length > this.half) {
      this.dropped += this.tail.length - this.half;
      this.tail = this.tail.slice(-this.half);
    }
  }

  toString(): string {
    if (this.dropped === 0) return this.head + this.tail;
    return `${this.head}\n[truncated: ${this.dropped} more characters]\n${this.tail}`;
  }
}
