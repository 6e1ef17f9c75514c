// read_file: returns a text file (or a line range of it) with line numbers, so the model can
// cite lines and edit precisely.
import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool } from "./tool.js";
import { MAX_OUTPUT_BYTES, fileErrorResult, readThroughEnvironment } from "./files.js";

/** Very long lines (minified code) are clipped so a single line cannot eat the budget. */
const MAX_LINE_CHARS = 2000;

export const readFileTool = defineTool({
  name: "read_file",
  description:
    "Read a text file from the workspace. Lines are prefixed with their 1-based line number and a tab. " +
    "Use startLine/endLine (inclusive) to read part of a large file.",
  kind: "readOnly",
  input: z.object({
    path: z.string().min(1).describe("File path, relative to the workspace root (or absolute inside it)."),
    startLine: z.number().int().min(1).optional().describe("First line to return (1-based, inclusive)."),
    endLine: z.number().int().min(1).optional().describe("Last line to return (1-based, inclusive)."),
  }),
  async execute(input, ctx) {
    let text: string | undefined;
    try {
      const file = ctx.workspace.resolve(input.path);
      // The environment (an editor) may hold unsaved changes; the disk is the fallback.
      text = await readThroughEnvironment(ctx, file);
      if (text === undefined) {
        if ((await fs.stat(file)).isDirectory()) {
          return { output: `${input.path} is a directory; use list_files to see its contents.`, isError: true };
        }
        const data = await fs.readFile(file);
        if (data.subarray(0, 8000).includes(0)) {
          return { output: `${input.path} appears to be a binary file; not shown.`, isError: true };
        }
        text = data.toString("utf8");
      }
    } catch (error) {
      return fileErrorResult(error, input.path);
    }

    const lines = text.split("\n");
    if (lines.at(-1) === "") lines.pop(); // a trailing newline does not start another line
    const total = lines.length;
    if (total === 0) return { output: `(${input.path} is empty)` };

    const ranged = input.startLine !== undefined || input.endLine !== undefined;
    const start = input.startLine ?? 1;
    const end = Math.min(input.endLine ?? total, total);
    if (start > total) {
      return { output: `startLine ${start} is past the end of ${input.path} (${total} lines).`, isError: true };
    }
    if (end < start) {
      return { output: `endLine ${input.endLine} is before startLine ${start}.`, isError: true };
    }

    const width = Math.max(5, String(end).length);
    const out: string[] = [];
    if (ranged) out.push(`[lines ${start}-${end} of ${total}]`);
    let bytes = 0;
    for (let n = start; n <= end; n++) {
      let text = lines[n - 1]!;
      if (text.length > MAX_LINE_CHARS) {
        text = `${text.slice(0, MAX_LINE_CHARS)} [line truncated: ${text.length - MAX_LINE_CHARS} more chars]`;
      }
      const line = `${String(n).padStart(width)}\t${text}`;
      bytes += Buffer.byteLength(line) + 1;
      if (bytes > MAX_OUTPUT_BYTES) {
        out.push(`[truncated: ${end - n + 1} more lines; continue with startLine=${n}]`);
        break;
      }
      out.push(line);
    }
    return { output: out.join("\n") };
  },
});
