// list_files: directory listing, optionally recursive, directories marked with a trailing "/".
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineTool } from "./tool.js";
import { MAX_ENTRIES, fileErrorResult, truncateBytes, walk } from "./files.js";

export const listFilesTool = defineTool({
  name: "list_files",
  description:
    "List the entries of a directory (default: the workspace root), sorted, with a trailing / on directories. " +
    "recursive lists the whole tree (paths relative to the directory), skipping .git and node_modules.",
  kind: "readOnly",
  input: z.object({
    path: z.string().optional().describe("Directory to list; defaults to the workspace root."),
    recursive: z.boolean().optional().describe("List subdirectories too."),
  }),
  async execute(input, ctx) {
    const requested = input.path ?? ".";
    let dir: string;
    try {
      dir = ctx.workspace.resolve(requested);
      if (!(await fs.stat(dir)).isDirectory()) {
        return { output: `${requested} is a file, not a directory; use read_file.`, isError: true };
      }
    } catch (error) {
      return fileErrorResult(error, requested);
    }

    const names: string[] = [];
    let more = false;
    if (input.recursive) {
      for await (const entry of walk(dir)) {
        if (names.length >= MAX_ENTRIES) {
          more = true;
          break;
        }
        names.push(entry.isDirectory ? `${entry.rel}/` : entry.rel);
      }
    } else {
      const entries = await fs.readdir(dir, { withFileTypes: true });
      for (const entry of entries) {
        names.push((await isDirectory(dir, entry)) ? `${entry.name}/` : entry.name);
      }
      more = names.length > MAX_ENTRIES;
    }
    if (names.length === 0) return { output: `${requested} is empty.` };
    const total = names.length;
    const shown = names.sort().slice(0, MAX_ENTRIES);
    if (more) {
      // A recursive walk stops at the cap, so the remainder is unknown there.
      shown.push(
        input.recursive
          ? `[truncated: listing stopped after ${MAX_ENTRIES} entries; list a subdirectory]`
          : `[truncated: ${total - MAX_ENTRIES} more entries]`,
      );
    }
    return { output: truncateBytes(shown.join("\n")) };
  },
});

// A symlink to a directory is shown as a directory; following it only to stat is harmless.
async function isDirectory(dir: string, entry: { name: string; isDirectory(): boolean; isSymbolicLink(): boolean }) {
  if (entry.isDirectory()) return true;
  if (!entry.isSymbolicLink()) return false;
  return fs.stat(path.join(dir, entry.name)).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
