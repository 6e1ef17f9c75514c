// The configuration file: `config.json` in the data directory. Optional; everything in it can
// also come from flags or environment variables, which win over it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ConfigFile } from "./file-schema.js";

export type { ConfigFile };

export const CONFIG_FILE = "config.json";

export type ProviderSettings = NonNullable<ConfigFile["providers"]>;

export class ConfigFileError extends Error {
  override name = "ConfigFileError";
}

export interface LoadedConfigFile {
  /** Absolute path of the file, whether or not it exists. */
  path: string;
  exists: boolean;
  config: ConfigFile;
}

/** Reads and validates `config.json` in dataDir. A missing file is an empty configuration. */
export async function loadConfigFile(dataDir: string): Promise<LoadedConfigFile> {
  const file = path.resolve(dataDir, CONFIG_FILE);
  const shown = displayPath(file);
  let raw: string;
  try {
    raw = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { path: file, exists: false, config: {} };
    throw new ConfigFileError(`${shown}: cannot be read: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new ConfigFileError(`${shown}: not valid JSON: ${(error as Error).message}`);
  }
  // The schema loads only when there is a file to check: zod is most of what start-up would load.
  const { checkConfigFile } = await import("./file-schema.js");
  const checked = checkConfigFile(value);
  if (!checked.ok) throw new ConfigFileError(checked.problems.map((problem) => `${shown}: ${problem}`).join("\n"));
  return { path: file, exists: true, config: checked.config };
}

/** Paths under the home directory are shown as ~/..., as people type them. */
export function displayPath(file: string): string {
  const home = os.homedir();
  return file === home || file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
}
