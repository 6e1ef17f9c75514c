// A workspace's own configuration: `.craft/config.json` in the workspace (the layout the
// AppServer document uses). Switchyard reads the sections it knows and keeps the rest as it is.
import fs from "node:fs";
import path from "node:path";
import { writeFileDurably } from "../durable-file.js";
import { RuntimeError } from "../domain/errors.js";

export type Settings = Record<string, unknown>;

export const craftDir = (workspacePath: string): string => path.join(workspacePath, ".craft");
const settingsFile = (workspacePath: string): string => path.join(craftDir(workspacePath), "config.json");

/** The workspace's settings; {} when it has none. Throws invalidInput when the file is not a JSON object. */
export function readSettings(workspacePath: string): Settings {
  const file = settingsFile(workspacePath);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RuntimeError("invalidInput", `${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new RuntimeError("invalidInput", `${file} is not a JSON object`);
  return parsed as Settings;
}

/** Reads, changes and writes the settings whole (a crash leaves the old file or the new). */
export function updateSettings(workspacePath: string, change: (settings: Settings) => void): Settings {
  const settings = readSettings(workspacePath);
  change(settings);
  writeFileDurably(settingsFile(workspacePath), `${JSON.stringify(settings, null, 2)}\n`);
  return settings;
}

/** A section of the settings as an object (created when missing). */
export function section(settings: Settings, name: string): Record<string, unknown> {
  const value = settings[name];
  if (value && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  const created: Record<string, unknown> = {};
  settings[name] = created;
  return created;
}

/** A list of names in a section, e.g. skills.disabled. */
export function nameList(settings: Settings, sectionName: string, key: string): string[] {
  const value = (settings[sectionName] as Record<string, unknown> | undefined)?.[key];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** Adds or removes a name of a list in a section; the list keeps no duplicates. */
export function setInList(settings: Settings, sectionName: string, key: string, name: string, present: boolean): void {
  const names = new Set(nameList(settings, sectionName, key));
  if (present) names.add(name);
  else names.delete(name);
  section(settings, sectionName)[key] = [...names].sort();
}
