// Markdown files with YAML front matter (SKILL.md, command templates): the metadata between the
// opening and closing `---` lines, and the body after them.
import { parse } from "yaml";

export interface FrontMatter {
  /** The parsed front matter; null when the file has none (or it is not a mapping). */
  metadata: Record<string, unknown> | null;
  /** The text after the front matter. */
  body: string;
}

const FENCE = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

export function parseFrontMatter(text: string): FrontMatter {
  const match = FENCE.exec(text.replace(/^\uFEFF/, ""));
  if (!match) return { metadata: null, body: text };
  let parsed: unknown;
  try {
    parsed = parse(match[1]!);
  } catch {
    return { metadata: null, body: text };
  }
  const metadata = parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  return { metadata, body: text.slice(match[0].length).replace(/^\s*\n/, "") };
}

/** A metadata value as a string, if it is one (numbers and booleans too). */
export function metadataString(metadata: Record<string, unknown> | null, key: string): string | undefined {
  const value = metadata?.[key];
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? String(value) : undefined;
}
