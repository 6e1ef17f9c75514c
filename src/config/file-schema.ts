// The configuration file's schema, and its problems in words. Loaded only when a config.json
// exists (see loadConfigFile).
import { z } from "zod";
import { BackendSpecSchema } from "../domain/backend-spec-schema.js";

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

export function checkConfigFile(value: unknown): { ok: true; config: ConfigFile } | { ok: false; problems: string[] } {
  const parsed = ConfigFileSchema.safeParse(value);
  return parsed.success ? { ok: true, config: parsed.data } : { ok: false, problems: parsed.error.issues.map(describeIssue) };
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
