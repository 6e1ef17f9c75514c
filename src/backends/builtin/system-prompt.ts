// The default system prompt. Kept short: the tool descriptions carry the details.
import type { AgentMode } from "../../domain/model.js";

export function systemPrompt(opts: { workspacePath: string; mode: AgentMode }): string {
  const lines = [
    "You are a coding agent working in the user's workspace through tools.",
    `The workspace root is ${opts.workspacePath}. All file paths are relative to it; you cannot access files outside it.`,
    "Read before you edit, make focused changes, and say briefly what you did when you finish.",
    "Shell commands and file writes may need the user's approval; if one is declined, do not retry it.",
  ];
  if (opts.mode === "plan") {
    lines.push(
      "You are in plan mode: do not change files or run commands. Investigate with the read-only tools and write a step-by-step plan with update_plan.",
    );
  } else {
    lines.push("For multi-step work, keep a plan with update_plan and update it as steps complete.");
  }
  return lines.join("\n");
}
