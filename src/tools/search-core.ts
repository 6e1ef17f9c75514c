// The search itself: walking files and testing lines against a regular expression. It runs in
// a worker thread (search-worker.ts), so a pathological pattern stalls that thread, which can be
// stopped, and never the server.
import fs from "node:fs/promises";
import path from "node:path";
import { MAX_OUTPUT_BYTES, globToRegExp, walk } from "./files.js";

const MAX_MATCHES = 500;
const MAX_MATCH_LINE_CHARS = 300;
/** Larger files are most likely generated or data; skipping them keeps searches fast. */
const MAX_FILE_BYTES = 2_000_000;

export interface SearchJob {
  pattern: string;
  caseInsensitive: boolean;
  /** The resolved file or directory to search (already confined to the workspace). */
  base: string;
  baseIsDir: boolean;
  /** The workspace root, for relative paths in the output. */
  root: string;
  glob?: string;
}

export interface SearchResult {
  lines: string[];
  truncated: boolean;
}

export async function runSearch(job: SearchJob): Promise<SearchResult> {
  const regex = new RegExp(job.pattern, job.caseInsensitive ? "i" : "");
  const { base, glob } = job;
  const relative = (file: string): string => path.relative(job.root, file).split(path.sep).join("/");
  const files: AsyncIterable<{ path: string; rel: string }> = job.baseIsDir ? regularFiles(base) : oneFile(base, path.basename(base));
  // Like ripgrep's --glob: a pattern without "/" is matched against the file name only.
  const fileFilter = glob ? globToRegExp(glob) : undefined;
  const byName = glob !== undefined && !glob.includes("/");

  const out: string[] = [];
  let bytes = 0;
  let truncated = false;
  search: for await (const file of files) {
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
      const hit = `${relative(file.path)}:${i + 1}:${line}`;
      bytes += Buffer.byteLength(hit) + 1;
      out.push(hit);
    }
  }
  return { lines: out, truncated };
}

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
