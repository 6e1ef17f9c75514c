// The configuration file: `config.json` in the data directory. Optional; everything in it can
// also come from flags or environment variables, which win over it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { BackendSpecSchema } from "../domain/backend-spec.js";

export const CONFIG_FILE = "config.json";

const text = z.string().min(1, "expected a non-empty string");
const positiveInt = z.number().int("expected an integer").positive("expected a positive number");
const strings = z.array(z.string());

// Strict objects: a misspelt setting is reported instead of silently ignored.
const OpenAISettings = z.strictObject({ apiKey: text.optional(), baseURL: text.optional() });

export const ConfigFileSchema = z.strictObject({
  /** Set when the file is used with an editor that validates against a JSON schema. */
  $schema: z.string().optional(),
  provider: text.optional(),
  model: text.optional(),
  providers: z
    .strictObject({
      openai: OpenAISettings.optional(),
      "openai-chat": OpenAISettings.optional(),
      anthropic: z
        .strictObject({
          apiKey: text.optional(),
          baseURL: text.optional(),
          thinkingBudgetTokens: z.number().int("expected an integer").min(1024, "expected at least 1024").optional(),
        })
        .optional(),
      ollama: z.strictObject({ host: text.optional() }).optional(),
      scripted: z.strictObject({ script: text.optional() }).optional(),
    })
    .optional(),
  /** The backend of threads that name none, e.g. {"type":"acp","command":"claude-agent-acp"}. */
  backend: BackendSpecSchema.optional(),
  /** How long an external agent's process is kept for an idle thread. */
  agentIdleTimeoutMs: positiveInt.optional(),
  approvalTimeoutMs: positiveInt.optional(),
  commandTimeoutMs: positiveInt.optional(),
  allowedOrigins: strings.optional(),
  allowedHosts: strings.optional(),
});

export type ConfigFile = z.infer<typeof ConfigFileSchema>;
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
export function loadConfigFile(dataDir: string): LoadedConfigFile {
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
  const parsed = ConfigFileSchema.safeParse(value);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${shown}: ${describeIssue(issue)}`);
    throw new ConfigFileError(lines.join("\n"));
  }
  return { path: file, exists: true, config: parsed.data };
}

/** "providers.anthropic.apiKey: expected string" — the JSON path first, then what is wrong. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const where = jsonPath(issue.path);
  switch (issue.code) {
    case "invalid_type":
      return `${where || "(top level)"}: expected ${issue.expected === "object" && where === "" ? "a JSON object" : issue.expected}`;
    case "unrecognized_keys":
      return issue.keys.map((key) => `${jsonPath([...issue.path, key])}: unknown setting`).join("; ");
    default:
      return `${where || "(top level)"}: ${issue.message}`;
  }
}

function jsonPath(parts: ReadonlyArray<PropertyKey>): string {
  return parts.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`)).join("");
}

/** Paths under the home directory are shown as ~/..., as people type them. */
export function displayPath(file: string): string {
  const home = os.homedir();
  return file === home || file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
}
