// Provider settings from the configuration file, handed to the providers as the environment
// variables they already read. Keeping the file's settings out of the providers' own option
// types means the providers need no knowledge of the file, and env keeps winning over it.
import type { Logger } from "../log.js";
import { ModelCatalog } from "../providers/model-catalog.js";
import { isOfficialOpenAI } from "../providers/openai-client.js";
import type { ModelProvider } from "../providers/provider.js";
import { createProvider, detectDefaultProvider, type DetectedProvider } from "../providers/select.js";
import type { ProviderSettings } from "./file.js";

/**
 * Which environment variable carries each file setting. The SDKs' own names where they have
 * one; SWITCHYARD_* otherwise.
 */
const ENV_NAMES = {
  openai: { apiKey: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL" },
  anthropic: { apiKey: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL", thinkingBudgetTokens: "SWITCHYARD_ANTHROPIC_THINKING_BUDGET_TOKENS" },
  ollama: { host: "OLLAMA_HOST" },
  scripted: { script: "SWITCHYARD_SCRIPT" },
} as const;

/**
 * The environment a provider is built from: the file's settings under the process environment
 * (a variable that is set and not empty wins). The "openai" and "openai-chat" sections both
 * feed the OPENAI_* variables: the section named after `provider` is preferred field by field.
 */
export function providerEnv(env: NodeJS.ProcessEnv, settings: ProviderSettings | undefined, provider?: string): NodeJS.ProcessEnv {
  if (!settings) return env;
  const fromFile: Record<string, string> = {};
  const put = (name: string, value: string | number | undefined): void => {
    if (value !== undefined) fromFile[name] = String(value);
  };
  const chat = provider?.trim().toLowerCase() === "openai-chat";
  const [first, second] = chat ? [settings["openai-chat"], settings.openai] : [settings.openai, settings["openai-chat"]];
  put(ENV_NAMES.openai.apiKey, first?.apiKey ?? second?.apiKey);
  put(ENV_NAMES.openai.baseURL, first?.baseURL ?? second?.baseURL);
  put(ENV_NAMES.anthropic.apiKey, settings.anthropic?.apiKey);
  put(ENV_NAMES.anthropic.baseURL, settings.anthropic?.baseURL);
  put(ENV_NAMES.anthropic.thinkingBudgetTokens, settings.anthropic?.thinkingBudgetTokens);
  put(ENV_NAMES.ollama.host, settings.ollama?.host);
  put(ENV_NAMES.scripted.script, settings.scripted?.script);
  const merged: NodeJS.ProcessEnv = { ...fromFile };
  // Empty variables count as unset, as the providers treat them.
  for (const [name, value] of Object.entries(env)) if (value !== undefined && value !== "") merged[name] = value;
  return merged;
}

/**
 * The providers that look usable with this environment and file: the default one, and every
 * other whose credentials or endpoint are set. Used to build the model catalog.
 */
export function configuredProviders(env: NodeJS.ProcessEnv, settings: ProviderSettings | undefined, defaultProvider?: string): string[] {
  const merged = providerEnv(env, settings);
  const names = new Set<string>();
  if (defaultProvider) names.add(defaultProvider);
  const openAIFamily = defaultProvider === "openai" || defaultProvider === "openai-chat";
  const openAIBase = merged["OPENAI_BASE_URL"];
  if (!openAIFamily && (merged["OPENAI_API_KEY"] || openAIBase)) {
    // As select.ts decides: compatible servers speak Chat Completions, api.openai.com the Responses API.
    const chat = (openAIBase && !isOfficialOpenAI(openAIBase)) || (settings?.["openai-chat"] && !settings.openai);
    names.add(chat ? "openai-chat" : "openai");
  }
  if (merged["ANTHROPIC_API_KEY"] || merged["ANTHROPIC_BASE_URL"]) names.add("anthropic");
  if (settings?.ollama || merged["OLLAMA_HOST"]) names.add("ollama");
  if (settings?.scripted) names.add("scripted");
  return [...names];
}

/**
 * The provider (and maybe model) to use when nothing names a provider: the one the keys point
 * at, else a local Ollama. The file's keys count as if they were in the environment.
 */
export function detectDefault(env: NodeJS.ProcessEnv, settings: ProviderSettings | undefined): Promise<DetectedProvider | undefined> {
  return detectDefaultProvider(providerEnv(env, settings));
}

export interface ProviderSetup {
  /** The server's default provider and model after auto-detection. */
  defaults: { provider?: string; model?: string };
  resolveProvider(selection: { provider?: string; model?: string }): ModelProvider | { problem: string };
  catalog: ModelCatalog;
}

/** Everything the runtime needs about providers, from the resolved configuration. */
export async function setUpProviders(
  config: { env: NodeJS.ProcessEnv; providerSettings?: ProviderSettings; provider?: string; model?: string },
  log: Logger,
): Promise<ProviderSetup> {
  const { env, providerSettings: settings } = config;
  const defaults: ProviderSetup["defaults"] = {
    ...(config.provider ? { provider: config.provider } : {}),
    ...(config.model ? { model: config.model } : {}),
  };
  if (!defaults.provider) {
    const detected = await detectDefault(env, settings);
    if (detected) {
      defaults.provider = detected.provider;
      if (!defaults.model && detected.model) defaults.model = detected.model;
      log.info({ provider: detected.provider, model: defaults.model }, "no provider configured; using the auto-detected default");
    }
  }
  const resolveProvider: ProviderSetup["resolveProvider"] = (selection) =>
    createProvider({ ...selection, env: providerEnv(env, settings, selection.provider) });
  const fallback = resolveProvider(defaults);
  const def = "problem" in fallback ? undefined : { provider: fallback.name, model: defaults.model ?? fallback.defaultModel };
  const catalog = new ModelCatalog({
    providers: configuredProviders(env, settings, def?.provider),
    envFor: (provider) => providerEnv(env, settings, provider),
    ...(def ? { default: def } : {}),
    log,
  });
  return { defaults, resolveProvider, catalog };
}
