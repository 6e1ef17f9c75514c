// run_subagent: the agent hands a self-contained task to a subagent, which works on it in a
// thread of its own (linked to this one by metadata.parentThreadId, visible to every client,
// its approvals put to the clients following this thread) and answers with its result.
import { z } from "zod";
import { runPrompt } from "./run-prompt.js";
import type { RuntimeApi } from "../runtime/api.js";
import type { SubagentDefinition } from "../workspace/subagents.js";
import { defineTool, type AnyTool } from "../tools/tool.js";

export interface SubagentHost {
  runtime: Pick<RuntimeApi, "getThread" | "startThread" | "startTurn" | "subscribe" | "interrupt">;
  definition(workspacePath: string, profile?: string): SubagentDefinition;
}

export function runSubagentTool(host: () => SubagentHost): AnyTool {
  return defineTool({
    name: "run_subagent",
    description:
      'Hand a self-contained task to a subagent working in its own thread, and get its answer. Profiles: "general" (your tools) and "explorer" (reads and searches only), or one the workspace defines. Say everything it needs in the task: it does not see this conversation.',
    kind: "write",
    input: z.object({
      task: z.string().min(1).describe("The task, complete in itself."),
      profile: z.string().optional().describe('The subagent profile; default "general".'),
      name: z.string().optional().describe("A short name for its thread."),
    }),
    async execute(input, ctx) {
      const { runtime, definition } = host();
      if (!ctx.threadId) return { output: "Subagents need a thread.", isError: true };
      const parent = await runtime.getThread(ctx.threadId);
      if (typeof parent.metadata.parentThreadId === "string") return { output: "A subagent cannot start subagents.", isError: true };
      const profile = input.profile ?? "general";
      const def = definition(parent.workspacePath, profile);
      const { systemPrompt: _parentPrompt, tools: _parentTools, ...inherited } = parent.configuration ?? {};
      const child = runtime.startThread({
        workspacePath: parent.workspacePath,
        originChannel: "subagent",
        displayName: input.name ?? `${profile} subagent`,
        configuration: {
          ...inherited,
          ...(def.model ? { model: def.model } : {}),
          ...(def.provider ? { provider: def.provider } : {}),
          ...(def.tools ? { tools: def.tools } : {}),
        },
        metadata: { parentThreadId: parent.id, subagentProfile: profile, parentCallId: ctx.callId },
      });
      const stop = (): void => void runtime.interrupt(child.id).catch(() => {});
      ctx.signal.addEventListener("abort", stop, { once: true });
      try {
        const prompt = def.systemPrompt ? `${def.systemPrompt}\n\nTask: ${input.task}` : input.task;
        const outcome = await runPrompt(runtime, child.id, prompt);
        const answer = outcome.text ?? "(the subagent gave no answer)";
        return outcome.status === "ok"
          ? { output: `${answer}\n\n[subagent thread ${child.id}]` }
          : { output: `The subagent failed: ${outcome.error ?? "unknown error"}\n\n[subagent thread ${child.id}]`, isError: true };
      } finally {
        ctx.signal.removeEventListener("abort", stop);
      }
    },
  });
}
