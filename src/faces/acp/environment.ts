// ACP face: the client's file system and terminal as the thread's tool environment, for the
// capabilities the client offered at initialize. The editor then sees (and serves) its unsaved
// buffers, and commands run in terminals it shows.
import type * as acp from "@agentclientprotocol/sdk";
import { methods } from "@agentclientprotocol/sdk";
import type { CommandRequest, CommandResult, ToolEnvironment } from "../../tools/tool.js";
import { MAX_OUTPUT_BYTES } from "../../tools/files.js";

/** Time the client gets to kill a command before the tool stops waiting for it. */
const KILL_WAIT_MS = 5_000;

/**
 * The environment for one session, or undefined when the client offered none of fs/terminal.
 * `onTerminal` is told the terminal a tool call's command runs in, so the call can show it.
 */
export function clientEnvironment(
  capabilities: acp.ClientCapabilities,
  client: () => acp.AgentContext | undefined,
  sessionId: string,
  onTerminal: (callId: string, terminalId: string) => void,
): ToolEnvironment | undefined {
  const connected = (): acp.AgentContext => {
    const c = client();
    if (!c) throw new Error("The ACP client is not connected.");
    return c;
  };
  const environment: ToolEnvironment = {};
  if (capabilities.fs?.readTextFile) {
    environment.readTextFile = async (path) => (await connected().request(methods.client.fs.readTextFile, { sessionId, path })).content;
  }
  if (capabilities.fs?.writeTextFile) {
    environment.writeTextFile = async (path, content) => {
      await connected().request(methods.client.fs.writeTextFile, { sessionId, path, content });
    };
  }
  if (capabilities.terminal) {
    environment.runCommand = (request) => runInTerminal(connected(), sessionId, request, onTerminal);
  }
  return Object.keys(environment).length > 0 ? environment : undefined;
}

async function runInTerminal(
  client: acp.AgentContext,
  sessionId: string,
  request: CommandRequest,
  onTerminal: (callId: string, terminalId: string) => void,
): Promise<CommandResult> {
  const { terminalId } = await client.request(methods.client.terminal.create, {
    sessionId,
    command: "bash",
    args: ["-c", request.command],
    cwd: request.cwd,
    outputByteLimit: MAX_OUTPUT_BYTES,
  });
  onTerminal(request.callId, terminalId);
  const ids = { sessionId, terminalId };
  try {
    let stopped: "timeout" | "abort" | undefined;
    const exit = client.request<acp.WaitForTerminalExitResponse>(methods.client.terminal.waitForExit, ids);
    const stop = new Promise<void>((resolve) => {
      const timer = setTimeout(
        () => {
          stopped = "timeout";
          resolve();
        },
        Math.min(request.timeoutMs, 2 ** 31 - 1),
      );
      exit.finally(() => clearTimeout(timer)).catch(() => {});
      request.signal.addEventListener(
        "abort",
        () => {
          stopped ??= "abort";
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
      if (request.signal.aborted) {
        stopped = "abort";
        resolve();
      }
    });
    let status: acp.WaitForTerminalExitResponse | undefined = await Promise.race([exit, stop.then(() => undefined)]);
    if (status === undefined) {
      await client.request(methods.client.terminal.kill, ids).catch(() => {});
      status = await Promise.race([exit, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), KILL_WAIT_MS))]);
    }
    const output: acp.TerminalOutputResponse = await client.request(methods.client.terminal.output, ids);
    return {
      output: output.truncated ? `[earlier output truncated]\n${output.output}` : output.output,
      exitCode: status?.exitCode ?? output.exitStatus?.exitCode ?? null,
      signal: status?.signal ?? output.exitStatus?.signal ?? null,
      ...(stopped === "timeout" ? { timedOut: true } : {}),
      ...(stopped === "abort" ? { interrupted: true } : {}),
    };
  } finally {
    await client.request(methods.client.terminal.release, ids).catch(() => {});
  }
}
