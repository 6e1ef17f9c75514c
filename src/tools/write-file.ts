// write_file: creates or overwrites a whole file (parents included), recording the change for
// the turn's diff.
import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool, type ApprovalAsk } from "./tool.js";
import { PathEscapeError, type Workspace } from "./workspace.js";
import { fileErrorResult, readThroughEnvironment, writeText } from "./files.js";

/**
 * The approval ask shared by the file-writing tools. A path outside the workspace needs no
 * approval: execute() refuses it anyway and reports the error to the model.
 */
export function fileApproval(verb: string, requested: string, workspace: Workspace): ApprovalAsk | null {
  let target: string;
  try {
    target = workspace.resolve(requested);
  } catch (error) {
    if (error instanceof PathEscapeError) return null;
    throw error;
  }
  const rel = workspace.relative(target);
  return {
    approvalType: "file",
    operation: `${verb} ${rel}`,
    target,
    scopeKey: `file:${rel}`,
    reason: "Agent wants to write a file.",
  };
}

/** Reads a file's current text, or null when it does not exist yet. */
export async function readIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

export const writeFileTool = defineTool({
  name: "write_file",
  description:
    "Create a file or replace its entire content. Missing parent directories are created. " +
    "Prefer `edit` for changing part of an existing file.",
  kind: "write",
  input: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace root (or absolute inside it)."),
    content: z.string().describe("The complete new content of the file."),
  }),
  approval(input, { workspace }) {
    return fileApproval("write", input.path, workspace);
  },
  async execute(input, ctx) {
    try {
      const file = ctx.workspace.resolve(input.path);
      const before = (await readThroughEnvironment(ctx, file)) ?? (await readIfExists(file));
      await writeText(ctx, file, input.content);
      ctx.recordFileChange({ path: file, before, after: input.content });
      const rel = ctx.workspace.relative(file);
      const size = Buffer.byteLength(input.content);
      return { output: `${before === null ? "Created" : "Overwrote"} ${rel} (${size} bytes).` };
    } catch (error) {
      return fileErrorResult(error, input.path);
    }
  },
});
