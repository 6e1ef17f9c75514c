// Provider settings from the configuration file, handed to the providers as the environment
// variables they already read. Keeping the file's settings out of the providers' own option
// types means the providers need no knowledge of the file, and env keeps winning over it.
import type { Logger } from "../log.js";
import { ModelCatalog } from "../providers/model-catalog.js";
import { isOfficialOpenAI } from "../providers/endpoints.js";
import type { ModelProvider } from "../providers/provider.js";
import {
  createProvider,
  detectDefaultProvider,
  isProviderConfigProblem,
  planProvider,
  type DetectedProvider,
} from "../providers/select.js";
import type { ProviderSettings } from "./file.js";

/**
 * Which environment variable carries each file setting. The SDKs' own names where they have
 * one; SWITCHYARD_* otherwise.
 */
const ENV_NAMES = {
  openai: { apiKey: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL" },
  anthropic: {
    apiKey: "ANTHROPIC_API_KEY",
    baseURL: "ANTHROPIC_BASE_URL",
    thinkingBudgetTokens: "SWITCHYARD_ANTHROPIC_THINKING_BUDGET_TOKENS",
  },
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
  /** The configured default provider and model (auto-detection is not applied here). */
  defaults: { provider?: string; model?: string };
  /** Builds the provider for a selection; with no provider named, the auto-detected default. */
  resolveProvider(selection: { provider?: string; model?: string }): Promise<ModelProvider | { problem: string }>;
  catalog: {
    list: ModelCatalog["list"];
    /** The provider turns use when none is named: the configured one, else the detected one. */
    defaultProvider(): Promise<string | undefined>;
  };
  /** Loads the default provider's SDK and client ahead of the first turn (see ModelProvider.prepare). */
  prepare(): Promise<void>;
}

/** Providers kept for reuse, by selection: a turn reuses the loaded SDK and client of an earlier one. */
const PROVIDER_CACHE_SIZE = 16;

/**
 * Everything the runtime needs about providers, from the resolved configuration. When no
 * provider is configured, detection (which may probe a local Ollama over HTTP) runs once, on
 * the first turn or catalog request, so it never delays start-up.
 */
export function setUpProviders(
  config: { env: NodeJS.ProcessEnv; providerSettings?: ProviderSettings; provider?: string; model?: string },
  log: Logger,
): ProviderSetup {
  const { env, providerSettings: settings } = config;
  const defaults: ProviderSetup["defaults"] = {
    ...(config.provider ? { provider: config.provider } : {}),
    ...(config.model ? { model: config.model } : {}),
  };
  /** A selection with the environment its provider reads (the settings' keys and URLs applied). */
  const withEnv = (selection: { provider?: string; model?: string }) => ({
    ...selection,
    env: providerEnv(env, settings, selection.provider),
  });
  const built = new Map<string, ModelProvider>();
  const build = async (selection: { provider?: string; model?: string }): Promise<ModelProvider | { problem: string }> => {
    const key = JSON.stringify([selection.provider, selection.model]);
    const cached = built.get(key);
    if (cached) return cached;
    const provider = await createProvider(withEnv(selection));
    if ("problem" in provider) return provider;
    // One instance per selection, the one the warm-up prepared: a build that ran alongside and
    // finished first wins.
    const first = built.get(key);
    if (first) return first;
    // Bounded: model names come from clients. The oldest entry goes first.
    if (built.size >= PROVIDER_CACHE_SIZE) built.delete(built.keys().next().value!);
    built.set(key, provider);
    return provider;
  };

  let detected: Promise<{ provider?: string; model?: string }> | undefined;
  const effectiveDefaults = (): Promise<{ provider?: string; model?: string }> =>
    (detected ??= defaults.provider
      ? Promise.resolve(defaults)
      : detectDefault(env, settings).then((found) => {
          if (!found) return defaults;
          log.info(
            { provider: found.provider, model: defaults.model ?? found.model },
            "no provider configured; using the auto-detected default",
          );
          return { provider: found.provider, ...((defaults.model ?? found.model) ? { model: defaults.model ?? found.model } : {}) };
        }));

  let catalog: Promise<ModelCatalog> | undefined;
  // From the default's plan: no provider's code loads for the catalog.
  const buildCatalog = async (): Promise<ModelCatalog> => {
    const plan = planProvider(withEnv(await effectiveDefaults()));
    const def = isProviderConfigProblem(plan) ? undefined : { provider: plan.name, model: plan.defaultModel };
    return new ModelCatalog({
      providers: configuredProviders(env, settings, def?.provider),
      envFor: (provider) => providerEnv(env, settings, provider),
      ...(def ? { default: def } : {}),
      log,
    });
  };

  return {
    defaults,
    resolveProvider: async (selection) => {
      if (selection.provider) return build(selection);
      const auto = await effectiveDefaults();
      return build({ ...auto, ...(selection.model ? { model: selection.model } : {}) });
    },
    catalog: {
      list: async (options) => (await (catalog ??= buildCatalog())).list(options),
      defaultProvider: async () => (await effectiveDefaults()).provider,
    },
    prepare: async () => {
      const provider = await build(await effectiveDefaults());
      if (!("problem" in provider)) await provider.prepare?.();
    },
  };
}
