// search_files: regex search over file contents, grep-style "path:line:text" output.
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineTool } from "./tool.js";
import { MAX_OUTPUT_BYTES, fileErrorResult, globToRegExp, walk } from "./files.js";

const MAX_MATCHES = 500;
const MAX_MATCH_LINE_CHARS = 300;
/** Larger files are most likely generated or data; skipping them keeps searches fast. */
const MAX_FILE_BYTES = 2_000_000;

export const searchFilesTool = defineTool({
  name: "search_files",
  description:
    "Search file contents with a JavaScript regular expression. Returns matching lines as path:line:text " +
    "(paths relative to the workspace root). Skips binary files, .git and node_modules.",
  kind: "readOnly",
  input: z.object({
    pattern: z.string().min(1).describe("JavaScript regular expression (without slashes), e.g. \"function\\\\s+main\"."),
    path: z.string().optional().describe("File or directory to search; defaults to the workspace root."),
    glob: z
      .string()
      .optional()
      .describe('Only search files matching this glob, e.g. "*.ts" (a glob without "/" matches file names at any depth).'),
    caseInsensitive: z.boolean().optional().describe("Ignore case."),
  }),
  async execute(input, ctx) {
    let regex: RegExp;
    try {
      regex = new RegExp(input.pattern, input.caseInsensitive ? "i" : "");
    } catch (error) {
      return { output: `Invalid regular expression: ${(error as Error).message}`, isError: true };
    }
    const requested = input.path ?? ".";
    let base: string;
    let baseIsDir: boolean;
    try {
      base = ctx.workspace.resolve(requested);
      baseIsDir = (await fs.stat(base)).isDirectory();
    } catch (error) {
      return fileErrorResult(error, requested);
    }

    // Like ripgrep's --glob: a pattern without "/" is matched against the file name only.
    const fileFilter = input.glob ? globToRegExp(input.glob) : undefined;
    const byName = input.glob !== undefined && !input.glob.includes("/");
    const files: AsyncIterable<{ path: string; rel: string }> = baseIsDir
      ? regularFiles(base)
      : oneFile(base, path.basename(base));

    const out: string[] = [];
    let bytes = 0;
    let truncated = false;
    search: for await (const file of files) {
      if (ctx.signal.aborted) break;
      if (fileFilter && !fileFilter.test(byName ? path.basename(file.rel) : file.rel)) continue;
      const text = await readText(file.path);
      if (text === null) continue;
      const lines = text.split("\n");
      for (let i = 0; i < lines.length; i++) {
        if (!regex.test(lines[i]!)) continue;
        if (out.length >= MAX_MATCHES || bytes > MAX_OUTPUT_BYTES) {
          truncated = true;
          break search;
        }
        let line = lines[i]!.replace(/\r$/, "");
        if (line.length > MAX_MATCH_LINE_CHARS) line = `${line.slice(0, MAX_MATCH_LINE_CHARS)}…`;
        const hit = `${ctx.workspace.relative(file.path)}:${i + 1}:${line}`;
        bytes += Buffer.byteLength(hit) + 1;
        out.push(hit);
      }
    }
    if (out.length === 0) return { output: `No matches for /${input.pattern}/ in ${requested}.` };
    if (truncated) out.push(`[truncated: stopped after ${out.length} matches; narrow the pattern, path or glob]`);
    return { output: out.join("\n") };
  },
});

async function* regularFiles(base: string) {
  for await (const entry of walk(base)) if (entry.isFile) yield entry;
}

async function* oneFile(file: string, rel: string) {
  yield { path: file, rel };
}

/** The file's text, or null for binary, oversized or unreadable files. */
async function readText(file: string): Promise<string | null> {
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return null;
    const data = await fs.readFile(file);
    if (data.subarray(0, 8000).includes(0)) return null;
    return data.toString("utf8");
  } catch {
    return null;
  }
}
