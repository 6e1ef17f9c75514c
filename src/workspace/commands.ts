// Custom commands: markdown prompt templates, `.craft/commands/<name>.md` in the workspace and
// `commands/<name>.md` in Switchyard's config dir (the workspace's win), with front matter
// (`description`, `argument-hint`). Running one expands its template with the arguments:
// `$ARGUMENTS` is all of them, `$1`…`$9` each; a template with neither gets them appended.
import fs from "node:fs";
import path from "node:path";
import { RESOURCE_NAME } from "./changes.js";
import { metadataString, parseFrontMatter } from "./front-matter.js";
import { craftDir } from "./settings.js";

export interface CommandInfo {
  /** The slash name, e.g. "/review". */
  name: string;
  aliases: string[];
  /** A key for the client's own translation; empty for custom commands. */
  descriptionKey: string;
  fallbackDescription: string;
  description: string;
  category: "builtin" | "custom";
  requiresAdmin: boolean;
  /** How the arguments are written, from the front matter's `argument-hint`. */
  argumentHint?: string;
  source?: "workspace" | "user";
  path?: string;
}

/** The commands the server runs itself, whatever the workspace. */
export const BUILTIN_COMMANDS: readonly CommandInfo[] = [
  builtin("/new", "cmd.new", "Start a new thread in the same workspace"),
  builtin("/stop", "cmd.stop", "Stop the running turn"),
];

function builtin(name: string, descriptionKey: string, description: string): CommandInfo {
  return { name, aliases: [], descriptionKey, fallbackDescription: description, description, category: "builtin", requiresAdmin: false };
}

export class Commands {
  constructor(private readonly userDir: string) {}

  list(workspacePath: string, options: { includeBuiltins?: boolean } = {}): CommandInfo[] {
    const custom = [...this.discover(workspacePath).values()].map((c) => c.info);
    return [...(options.includeBuiltins === false ? [] : BUILTIN_COMMANDS), ...custom];
  }

  /** The prompt a custom command expands to; undefined when there is no such custom command. */
  expand(workspacePath: string, name: string, args: string | string[] = []): string | undefined {
    const command = this.discover(workspacePath).get(bare(name));
    if (!command) return undefined;
    const template = parseFrontMatter(fs.readFileSync(command.file, "utf8")).body;
    return expandTemplate(template, typeof args === "string" ? splitArguments(args) : args);
  }

  private discover(workspacePath: string): Map<string, { info: CommandInfo; file: string }> {
    const byName = new Map<string, { info: CommandInfo; file: string }>();
    for (const [source, dir] of [
      ["workspace", path.join(craftDir(workspacePath), "commands")],
      ["user", this.userDir],
    ] as const) {
      for (const file of markdownFiles(dir)) {
        const name = file.slice(0, -".md".length);
        if (byName.has(name)) continue;
        const full = path.join(dir, file);
        const metadata = parseFrontMatter(fs.readFileSync(full, "utf8")).metadata;
        const description = metadataString(metadata, "description") ?? `Custom command ${name}`;
        const argumentHint = metadataString(metadata, "argument-hint") ?? metadataString(metadata, "arguments");
        byName.set(name, {
          file: full,
          info: {
            name: `/${name}`,
            aliases: [],
            descriptionKey: "",
            fallbackDescription: description,
            description,
            category: "custom",
            requiresAdmin: false,
            ...(argumentHint ? { argumentHint } : {}),
            source,
            path: full,
          },
        });
      }
    }
    return byName;
  }
}

/** "/review" and "review" name the same command. */
export const bare = (name: string): string => name.replace(/^\//, "");

export function expandTemplate(template: string, args: string[]): string {
  const all = args.join(" ");
  if (!/\$(ARGUMENTS|[1-9])/.test(template)) return all ? `${template.trimEnd()}\n\n${all}` : template;
  return template.replace(/\$ARGUMENTS/g, all).replace(/\$([1-9])/g, (_match, n: string) => args[Number(n) - 1] ?? "");
}

/** Splits a command's argument text on spaces, keeping "quoted words" together. */
export function splitArguments(text: string): string[] {
  return [...text.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? "");
}

function markdownFiles(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith(".md") && RESOURCE_NAME.test(entry.name.slice(0, -3)))
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}
