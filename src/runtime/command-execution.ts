// command/execute: a slash command run on a thread. The built-in ones act on the runtime (/new,
// /stop); a custom one becomes the thread's next input, a commandRef the engine expands.
import { RuntimeError } from "../domain/errors.js";
import type { QueuedInput, Thread, Turn } from "../domain/model.js";
import { bare, BUILTIN_COMMANDS, splitArguments, type Commands } from "../workspace/commands.js";
import type { RuntimeApi } from "./api.js";

export interface CommandExecution {
  handled: boolean;
  /** What to show the user, when the command says something itself. */
  message?: string;
  isMarkdown: boolean;
  /** The prompt a custom command expanded to (it is the thread's next input). */
  expandedPrompt: string | null;
  /** /new: the client should switch to `thread`. */
  sessionReset: boolean;
  thread?: Thread;
  /** The turn a custom command started, or... */
  turn?: Turn;
  /** ...the queued input it became behind the running turn. */
  queuedInput?: QueuedInput;
}

type Runtime = Pick<RuntimeApi, "getThread" | "startThread" | "runtimeState" | "interrupt" | "enqueue">;

export async function executeCommand(
  runtime: Runtime,
  commands: Commands,
  threadId: string,
  commandLine: string,
  args?: string[],
): Promise<CommandExecution> {
  const thread = await runtime.getThread(threadId);
  const [first = "", ...inline] = splitArguments(commandLine.trim());
  const name = bare(first);
  const argv = args ?? inline;
  if (BUILTIN_COMMANDS.some((c) => c.name === `/${name}`)) return runBuiltin(runtime, thread, name);
  const expandedPrompt = commands.expand(thread.workspacePath, name, argv);
  if (expandedPrompt === undefined)
    throw new RuntimeError("commandNotFound", `No command named /${name} in ${thread.workspacePath}`, { command: `/${name}` });
  const queued = await runtime.enqueue(threadId, [{ type: "commandRef", name, ...(argv.length ? { args: joinArguments(argv) } : {}) }]);
  return {
    handled: true,
    isMarkdown: false,
    expandedPrompt,
    sessionReset: false,
    ...(queued.turn ? { turn: queued.turn } : {}),
    ...(queued.queuedInput ? { queuedInput: queued.queuedInput } : {}),
  };
}

async function runBuiltin(runtime: Runtime, thread: Thread, name: string): Promise<CommandExecution> {
  const done = { handled: true, isMarkdown: false, expandedPrompt: null, sessionReset: false };
  if (name === "new") {
    const next = runtime.startThread({
      workspacePath: thread.workspacePath,
      originChannel: thread.originChannel,
      ...(thread.userId !== undefined ? { userId: thread.userId } : {}),
      ...(thread.channelContext !== undefined ? { channelContext: thread.channelContext } : {}),
      historyMode: thread.historyMode,
      ...(thread.configuration ? { configuration: thread.configuration } : {}),
    });
    return { ...done, message: "Started a new thread.", sessionReset: true, thread: next };
  }
  if (!runtime.runtimeState(thread.id).running) return { ...done, message: "No turn is running." };
  const turn = await runtime.interrupt(thread.id);
  return { ...done, message: "Stopped the running turn.", turn };
}

/** Arguments as one text again, quoting those with spaces, so the engine splits them the same way. */
function joinArguments(args: string[]): string {
  return args.map((arg) => (/\s/.test(arg) || arg === "" ? `"${arg}"` : arg)).join(" ");
}
