// Markdown files with YAML front matter (SKILL.md, command templates): the metadata between the
// opening and closing `---` lines, and the body after them.
import { yaml } from "../yaml.js";

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
    parsed = plainStringMapping(match[1]!) ?? yaml().parse(match[1]!);
  } catch {
    return { metadata: null, body: text };
  }
  const metadata = parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  return { metadata, body: text.slice(match[0].length).replace(/^\s*\n/, "") };
}

/** `key: value` where the key is a plain word and the value a plain scalar on its own line. */
const PLAIN_LINE = /^([A-Za-z_][\w-]*):[ \t]+([^\s\-?:,[\]{}#&*!|>'"%@`.+\d][^\r\n]*?)[ \t]*$/;
/** Plain scalars YAML's core schema reads as something other than a string. */
const NOT_A_STRING = /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE)$/;

/**
 * The front matter most files have (one `key: text` per line, as SKILL.md's `name` and
 * `description`), read without the YAML parser, whose first use compiles about 9 ms of code on
 * the first turn's path (the skill catalog goes into the first prompt). Exactly what `parse`
 * returns for such text; anything else (nesting, quotes, comments, lists, values that are not
 * strings, a repeated key) is undefined and left to the parser.
 */
export function plainStringMapping(text: string): Record<string, string> | undefined {
  const mapping: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") continue;
    const match = PLAIN_LINE.exec(line);
    if (!match) return undefined;
    const [, key, value] = match as unknown as [string, string, string];
    if (Object.hasOwn(mapping, key) || NOT_A_STRING.test(key) || NOT_A_STRING.test(value)) return undefined;
    if (/:[ \t]|:$|[ \t]#/.test(value)) return undefined;
    mapping[key] = value;
  }
  return Object.keys(mapping).length > 0 ? mapping : undefined;
}

/** A metadata value as a string, if it is one (numbers and booleans too). */
export function metadataString(metadata: Record<string, unknown> | null, key: string): string | undefined {
  const value = metadata?.[key];
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? String(value) : undefined;
}
