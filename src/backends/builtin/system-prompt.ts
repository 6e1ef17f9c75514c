// The default system prompt. Kept short: the tool descriptions carry the details.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { AgentMode } from "../../domain/model.js";

/** Project instructions longer than this are cut (they go into every model call). */
const MAX_INSTRUCTIONS_CHARS = 32 * 1024;

/** The workspace's AGENTS.md, read fresh for each turn as Codex does; undefined when there is none. */
export function projectInstructions(workspacePath: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(workspacePath, "AGENTS.md"), "utf8");
  } catch {
    return undefined;
  }
  if (text.trim() === "") return undefined;
  const cut =
    text.length > MAX_INSTRUCTIONS_CHARS
      ? `${text.slice(0, MAX_INSTRUCTIONS_CHARS)}\n[AGENTS.md cut at ${MAX_INSTRUCTIONS_CHARS} characters]`
      : text;
  return `Project instructions from AGENTS.md:\n\n${cut}`;
}

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

/** The skills the model may load, by name and description; undefined when there are none. */
export function skillCatalog(skills: Array<{ name: string; description: string }>): string | undefined {
  if (skills.length === 0) return undefined;
  return [
    "Skills (instructions for particular tasks): when the task matches one, load it with load_skill before you start.",
    ...skills.map((skill) => `- ${skill.name}: ${skill.description}`),
  ].join("\n");
}
