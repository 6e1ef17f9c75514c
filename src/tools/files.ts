// Small filesystem helpers the file tools share: tree walking, glob-to-RegExp, error mapping,
// output bounding.
import fs from "node:fs/promises";
import path from "node:path";
import type { ToolContext, ToolResult } from "./tool.js";
import { PathEscapeError } from "./workspace.js";

/** Output cap for every tool, so one call cannot flood the model's context. */
export const MAX_OUTPUT_BYTES = 100_000;
/** Cap on the number of paths a listing tool returns. */
export const MAX_ENTRIES = 1000;
/** Directories walks never descend into: huge and almost never what the model wants. */
const SKIPPED_DIRS = new Set([".git", "node_modules"]);

export interface WalkEntry {
  /** Absolute path. */
  path: string;
  /** Path relative to the walk's base, with forward slashes. */
  rel: string;
  isDirectory: boolean;
  isFile: boolean;
}

/**
 * Walks a directory tree depth-first in sorted order, skipping .git and node_modules.
 * Symlinks are yielded but never followed (a link could point outside the workspace or loop).
 */
export async function* walk(base: string, relPrefix = ""): AsyncGenerator<WalkEntry> {
  let entries;
  try {
    entries = await fs.readdir(base, { withFileTypes: true });
  } catch {
    return; // unreadable directories are skipped rather than failing the whole walk
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const rel = relPrefix ? `${relPrefix}/${entry.name}` : entry.name;
    const abs = path.join(base, entry.name);
    const isDirectory = entry.isDirectory();
    if (isDirectory && SKIPPED_DIRS.has(entry.name)) continue;
    yield { path: abs, rel, isDirectory, isFile: entry.isFile() };
    if (isDirectory) yield* walk(abs, rel);
  }
}

/**
 * Converts a glob to an anchored RegExp over forward-slash relative paths.
 * Supports `**` (any number of path segments), `*`, `?`, `{a,b}` (nestable) and `[abc]`/`[!abc]`.
 */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${globSource(pattern)}$`);
}

function globSource(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") {
      if (pattern[i + 1] === "*") {
        const atSegmentStart = i === 0 || pattern[i - 1] === "/";
        if (atSegmentStart && pattern[i + 2] === "/") {
          out += "(?:.*/)?"; // "**/" also matches zero directories
          i += 2;
        } else {
          out += ".*";
          i += 1;
        }
      } else {
        out += "[^/]*";
      }
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "{") {
      const close = matchingBrace(pattern, i);
      if (close === -1) {
        out += "\\{";
        continue;
      }
      const alternatives = splitTopLevel(pattern.slice(i + 1, close)).map(globSource);
      out += `(?:${alternatives.join("|")})`;
      i = close;
    } else if (c === "[") {
      const close = pattern.indexOf("]", i + 2);
      if (close === -1) {
        out += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, close);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      out += `[${negated ? "^/" : ""}${body.replace(/[\\\]]/g, "\\$&")}]`;
      i = close;
    } else {
      out += c.replace(/[.+^$()|\\\]}/]/g, "\\$&");
    }
  }
  return out;
}

function matchingBrace(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i++) {
    if (pattern[i] === "{") depth++;
    else if (pattern[i] === "}" && --depth === 0) return i;
  }
  return -1;
}

function splitTopLevel(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === "{") depth++;
    else if (body[i] === "}") depth--;
    else if (body[i] === "," && depth === 0) {
      parts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

/**
 * Turns the filesystem errors a model can act on (escape, missing file, wrong kind) into an
 * error result; anything else is a real failure and is rethrown.
 */
export function fileErrorResult(error: unknown, requested: string): ToolResult {
  if (error instanceof PathEscapeError) return { output: error.message, isError: true };
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const messages: Record<string, string> = {
    ENOENT: `No such file or directory: ${requested}`,
    EISDIR: `${requested} is a directory, not a file.`,
    ENOTDIR: `${requested} is not a directory (or a parent of it is a file).`,
    EACCES: `Permission denied: ${requested}`,
    EPERM: `Operation not permitted: ${requested}`,
  };
  const message = code ? messages[code] : undefined;
  if (message) return { output: message, isError: true };
  throw error;
}

/** Cuts text to at most `maxBytes` UTF-8 bytes, saying how much was dropped. */
export function truncateBytes(text: string, maxBytes = MAX_OUTPUT_BYTES): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  // Decoding a cut buffer may end in a replacement char for a split code point; harmless.
  const kept = bytes.subarray(0, maxBytes).toString("utf8");
  return `${kept}\n[truncated: ${bytes.length - maxBytes} more bytes]`;
}

/**
 * A file's text through the thread's environment (an editor's buffer), or undefined when there
 * is none or it could not read the file: the caller then reads the disk.
 */
export async function readThroughEnvironment(ctx: Pick<ToolContext, "environment">, file: string): Promise<string | undefined> {
  if (!ctx.environment?.readTextFile) return undefined;
  try {
    return await ctx.environment.readTextFile(file);
  } catch {
    return undefined;
  }
}

/** Writes a file through the thread's environment when it can, else to the disk (parents created). */
export async function writeText(ctx: Pick<ToolContext, "environment">, file: string, content: string): Promise<void> {
  if (ctx.environment?.writeTextFile) return ctx.environment.writeTextFile(file, content);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, content, "utf8");
}
