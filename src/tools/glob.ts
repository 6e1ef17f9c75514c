// glob: finds files by name pattern.
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineTool } from "./tool.js";
import { MAX_ENTRIES, walk, globToRegExp, fileErrorResult, truncateBytes } from "./files.js";

export const globTool = defineTool({
  name: "glob",
  description:
    "Find files whose path matches a glob pattern, relative to `path` (default: the workspace root). " +
    'Supports ** (any directories), *, ?, {a,b} and [abc]; e.g. "**/*.ts" or "src/{lib,test}/*.js". ' +
    "A pattern without ** only matches at its own depth. Skips .git and node_modules. Returns sorted paths relative to the workspace root.",
  kind: "readOnly",
  input: z.object({
    pattern: z.string().min(1).describe('Glob pattern relative to `path`, e.g. "**/*.test.ts".'),
    path: z.string().optional().describe("Directory to search from; defaults to the workspace root."),
  }),
  async execute(input, ctx) {
    const requested = input.path ?? ".";
    if (path.isAbsolute(input.pattern)) {
      return { output: "The pattern must be relative; put the base directory in `path`.", isError: true };
    }
    let base: string;
    try {
      base = ctx.workspace.resolve(requested);
      if (!(await fs.stat(base)).isDirectory()) {
        return { output: `${requested} is not a directory.`, isError: true };
      }
    } catch (error) {
      return fileErrorResult(error, requested);
    }
    const regex = globToRegExp(input.pattern.replace(/^\.\//, ""));
    const matches: string[] = [];
    let more = false;
    for await (const entry of walk(base)) {
      if (entry.isDirectory || !regex.test(entry.rel)) continue;
      if (matches.length >= MAX_ENTRIES) {
        more = true;
        break;
      }
      matches.push(ctx.workspace.relative(entry.path));
    }
    if (matches.length === 0) return { output: `No files match "${input.pattern}" in ${requested}.` };
    matches.sort();
    if (more) matches.push(`[truncated: stopped after ${MAX_ENTRIES} files; narrow the pattern]`);
    return { output: truncateBytes(matches.join("\n")) };
  },
});
