// search_files: regex search over file contents, grep-style "path:line:text" output.
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import { Worker } from "node:worker_threads";
import { z } from "zod";
import { defineTool } from "./tool.js";
import { fileErrorResult } from "./files.js";
import type { SearchJob, SearchResult } from "./search-core.js";

export const searchFilesTool = defineTool({
  name: "search_files",
  description:
    "Search file contents with a JavaScript regular expression. Returns matching lines as path:line:text " +
    "(paths relative to the workspace root). Skips binary files, .git and node_modules.",
  kind: "readOnly",
  input: z.object({
    pattern: z.string().min(1).describe('JavaScript regular expression (without slashes), e.g. "function\\\\s+main".'),
    path: z.string().optional().describe("File or directory to search; defaults to the workspace root."),
    glob: z
      .string()
      .optional()
      .describe('Only search files matching this glob, e.g. "*.ts" (a glob without "/" matches file names at any depth).'),
    caseInsensitive: z.boolean().optional().describe("Ignore case."),
  }),
  async execute(input, ctx) {
    try {
      new RegExp(input.pattern); // a bad pattern is reported here, before starting a worker
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

    const job: SearchJob = {
      pattern: input.pattern,
      caseInsensitive: input.caseInsensitive ?? false,
      base,
      baseIsDir,
      root: ctx.workspace.root,
      ...(input.glob ? { glob: input.glob } : {}),
    };
    const found = await searchInWorker(job, ctx.signal);
    if ("error" in found) return { output: found.error, isError: true };
    const { lines: out, truncated } = found;
    if (out.length === 0) return { output: `No matches for /${input.pattern}/ in ${requested}.` };
    if (truncated) out.push(`[truncated: stopped after ${out.length} matches; narrow the pattern, path or glob]`);
    return { output: out.join("\n") };
  },
});

/** How long one search may run before its worker is stopped. */
export const SEARCH_TIMEOUT_MS = 20_000;

/**
 * The worker's file: next to this module when compiled (dist/src/tools) or bundled into an
 * entry (dist), one level up when this module landed in a shared chunk (dist/chunks).
 */
function searchWorkerUrl(): URL {
  const beside = new URL("./search-worker.js", import.meta.url);
  return existsSync(beside) ? beside : new URL("../search-worker.js", import.meta.url);
}

/**
 * Runs a search in a worker thread: a pathological regular expression (catastrophic
 * backtracking) then blocks the worker, which is terminated at the time limit or on interrupt,
 * instead of the server's event loop.
 */
export function searchInWorker(
  job: SearchJob,
  signal: AbortSignal,
  timeoutMs = SEARCH_TIMEOUT_MS,
): Promise<SearchResult | { error: string }> {
  return new Promise((resolve) => {
    const worker = new Worker(searchWorkerUrl(), { workerData: job });
    const finish = (outcome: SearchResult | { error: string }): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      void worker.terminate();
      resolve(outcome);
    };
    const timer = setTimeout(
      () =>
        finish({
          error: `The search took longer than ${Math.round(timeoutMs / 1000)} s and was stopped. Use a simpler pattern, or narrow the path or glob.`,
        }),
      timeoutMs,
    );
    const onAbort = (): void => finish({ error: "The search was interrupted." });
    signal.addEventListener("abort", onAbort);
    worker.once("message", (message: { result?: SearchResult; error?: string }) =>
      finish(message.result ?? { error: `The search failed: ${message.error ?? "unknown error"}` }),
    );
    worker.once("error", (error) => finish({ error: `The search failed: ${error.message}` }));
  });
}
