// load_skill: the model reads a skill's instructions when its task matches one of the skills the
// system prompt lists (only their names and descriptions are sent with every call).
import { z } from "zod";
import { defineTool, type AnyTool } from "./tool.js";

export const LOAD_SKILL = "load_skill";

export interface SkillReader {
  /** An enabled skill's content for the workspace; undefined when there is none by that name. */
  contentFor(workspacePath: string, name: string): string | undefined;
  catalog(workspacePath: string): Array<{ name: string; description: string }>;
}

export function loadSkillTool(skills: SkillReader): AnyTool {
  return defineTool({
    name: LOAD_SKILL,
    description: "Load the full instructions of one of the skills listed in the system prompt, before doing the task it covers.",
    kind: "readOnly",
    input: z.object({ name: z.string().min(1).describe("The skill's name, as listed.") }),
    async execute(input, ctx) {
      const content = skills.contentFor(ctx.workspace.root, input.name);
      if (content !== undefined) return { output: content };
      const names = skills.catalog(ctx.workspace.root).map((s) => s.name);
      return { output: `No enabled skill named "${input.name}". Skills: ${names.join(", ") || "none"}.`, isError: true };
    },
  });
}
