// update_plan: lets the model keep a visible step-by-step plan for the thread.
import { z } from "zod";
import { defineTool } from "./tool.js";

export const updatePlanTool = defineTool({
  name: "update_plan",
  description: "Replace the current task plan. Send the full list of steps each time, with at most one step in_progress.",
  kind: "plan",
  input: z.object({
    explanation: z.string().optional().describe("Why the plan is being created or changed."),
    plan: z
      .array(
        z.object({
          step: z.string().min(1).describe("A short description of the step."),
          status: z.enum(["pending", "in_progress", "completed"]).describe("The step's status."),
        }),
      )
      .describe("All steps of the plan, in order."),
  }),
  async execute(input, ctx) {
    ctx.updatePlan({
      ...(input.explanation !== undefined ? { explanation: input.explanation } : {}),
      steps: input.plan,
    });
    return { output: "Plan updated" };
  },
});
