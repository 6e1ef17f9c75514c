// Tools a client provides (thread configuration.dynamicTools): offered to the model with the
// client's schema; a call goes to the clients following the thread, whose answer is the result.
import { z } from "zod";
import type { DynamicToolSpec } from "../domain/model.js";
import { defineTool, type AnyTool } from "./tool.js";

export function clientTool(spec: DynamicToolSpec): AnyTool {
  return defineTool({
    name: spec.name,
    description: spec.description ?? spec.name,
    kind: "write",
    // The client checks its own arguments; the model is given its schema as it is.
    input: z.record(z.string(), z.unknown()),
    parameters: spec.inputSchema ?? { type: "object", properties: {} },
    dynamic: true,
    async execute(input, ctx) {
      const result = await ctx.callClientTool?.({ callId: ctx.callId, tool: spec.name, arguments: input });
      if (!result) return { output: `No client following this thread can run ${spec.name} now.`, isError: true };
      return { output: result.output, isError: !result.success };
    },
  });
}
