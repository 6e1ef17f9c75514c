// edit: exact string replacement in an existing file. Exactness (and the uniqueness check) keeps
// the model from silently changing the wrong spot.
import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool } from "./tool.js";
import { fileErrorResult, readThroughEnvironment, writeText } from "./files.js";
import { fileApproval } from "./write-file.js";

export const editTool = defineTool({
  name: "edit",
  description:
    "Replace an exact string in an existing file. oldString must match the file exactly (whitespace included) " +
    "and be unique unless replaceAll is true; include surrounding lines to make it unique.",
  kind: "write",
  input: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace root (or absolute inside it)."),
    oldString: z.string().describe("The exact text to replace."),
    newString: z.string().describe("The replacement text."),
    replaceAll: z.boolean().optional().describe("Replace every occurrence instead of requiring exactly one."),
  }),
  approval(input, { workspace }) {
    return fileApproval("edit", input.path, workspace);
  },
  async execute(input, ctx) {
    if (input.oldString === "") {
      return { output: "oldString must not be empty; use write_file to create a file.", isError: true };
    }
    if (input.oldString === input.newString) {
      return { output: "oldString and newString are identical; nothing to change.", isError: true };
    }
    try {
      const file = ctx.workspace.resolve(input.path);
      const rel = ctx.workspace.relative(file);
      const before = (await readThroughEnvironment(ctx, file)) ?? (await fs.readFile(file, "utf8"));
      // split/join rather than String.replace: no "$&"-style patterns in newString.
      const parts = before.split(input.oldString);
      const count = parts.length - 1;
      if (count === 0) {
        return {
          output: `oldString was not found in ${rel}. Read the file and copy the text exactly, including whitespace.`,
          isError: true,
        };
      }
      if (count > 1 && !input.replaceAll) {
        return {
          output: `oldString was found ${count} times in ${rel}. Add surrounding context to make it unique, or set replaceAll to true.`,
          isError: true,
        };
      }
      const after = parts.join(input.newString);
      await writeText(ctx, file, after);
      ctx.recordFileChange({ path: file, before, after });
      return { output: `Edited ${rel}: replaced ${count} occurrence${count === 1 ? "" : "s"}.` };
    } catch (error) {
      return fileErrorResult(error, input.path);
    }
  },
});
