// Chooses and builds the model provider from configuration and environment. Importing this
// module loads no provider's code (each is imported when built) and no SDK (the providers import
// theirs on the first model call): detection and the model catalog need neither.
//
// Providers: openai (the Responses API), openai-chat (Chat Completions, for any compatible
// server by OPENAI_BASE_URL: vLLM, llama.cpp, LM Studio, OpenRouter, Ollama, ...), anthropic,
// ollama (openai-chat at OLLAMA_HOST, no key) and scripted (replays a script file).
import { isOfficialOpenAI } from "./endpoints.js";
import { DEFAULT_MODELS } from "./catalog.js";
import { createOllamaProvider, listOllamaModels, OLLAMA_FALLBACK_MODEL } from "./ollama.js";
import type { ModelProvider } from "./provider.js";
import { withRetries, type RetryPolicy } from "./retry.js";

/** Why no provider could be built, in words meant for the person starting the server. */
export interface ProviderConfigProblem {
  problem: string;
}

export interface ProviderSelection {
  /** One of PROVIDER_NAMES; when absent, chosen from the keys in `env` (see envDefaultProvider). */
  provider?: string;
  /** The model; for "scripted", the script's path. */
  model?: string;
  env: NodeJS.ProcessEnv;
  /** How model calls are retried (retry.ts); e.g. `{ maxAttempts: 1 }` turns retries off. */
  retry?: RetryPolicy;
}

export const PROVIDER_NAMES = ["openai", "openai-chat", "anthropic", "ollama", "scripted"] as const;

/** Placeholder key for local servers (vLLM, llama.cpp, ...) that ignore authentication. */
const NO_KEY_NEEDED = "not-needed";

const NO_PROVIDER =
  "No model provider is configured. Set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or ANTHROPIC_API_KEY, " +
  `start Ollama, or start with --provider <${PROVIDER_NAMES.join("|")}> --model <name>.`;

/**
 * What a selection resolves to before any provider's code loads: its name and default model
 * (what the model catalog needs, which a server may answer with before its runtime is up), and
 * how to build it.
 */
export interface ProviderPlan {
  name: string;
  defaultModel: string;
  build(): Promise<ModelProvider | ProviderConfigProblem>;
}

/** Builds the selected provider, wrapped in the retry policy. */
export async function createProvider(config: ProviderSelection): Promise<ModelProvider | ProviderConfigProblem> {
  const plan = planProvider(config);
  if (isProviderConfigProblem(plan)) return plan;
  const built = await plan.build();
  return isProviderConfigProblem(built) ? built : withRetries(built, config.retry);
}

export function isProviderConfigProblem<T extends object>(value: T | ProviderConfigProblem): value is ProviderConfigProblem {
  return "problem" in value;
}

/** Checks the selection's settings and plans its provider; loads none of the providers' code. */
export function planProvider(config: ProviderSelection): ProviderPlan | ProviderConfigProblem {
  const name = config.provider?.trim().toLowerCase() || envDefaultProvider(config.env);
  switch (name) {
    case "openai":
      return openAIResponses(config);
    case "openai-chat":
      return openAIChat(config);
    case "anthropic":
      return anthropic(config);
    case "ollama": {
      const defaultModel = config.model || OLLAMA_FALLBACK_MODEL;
      return { name, defaultModel, build: () => createOllamaProvider(config.env, defaultModel) };
    }
    case "scripted":
      return scripted(config);
    case undefined:
      return { problem: NO_PROVIDER };
    default:
      return { problem: `Unknown model provider "${config.provider}". Valid providers are: ${PROVIDER_NAMES.join(", ")}.` };
  }
}

/**
 * The provider the environment's keys point at, without asking the network: anthropic for
 * ANTHROPIC_API_KEY; openai-chat for an OPENAI_BASE_URL other than api.openai.com (compatible
 * servers rarely implement the Responses API); openai for OPENAI_API_KEY.
 */
export function envDefaultProvider(env: NodeJS.ProcessEnv): string | undefined {
  if (env["ANTHROPIC_API_KEY"]) return "anthropic";
  const baseURL = env["OPENAI_BASE_URL"];
  if (baseURL && !isOfficialOpenAI(baseURL)) return "openai-chat";
  if (env["OPENAI_API_KEY"]) return "openai";
  return undefined;
}

export interface DetectedProvider {
  provider: string;
  /** Set for Ollama: its first installed model (absent when it has none). */
  model?: string;
}

/**
 * The provider to use when none is configured: the one the keys in `env` point at, else a
 * local Ollama if GET <OLLAMA_HOST>/api/tags answers within `timeoutMs` (default 300), with
 * its first installed model. Undefined when there is neither.
 */
export async function detectDefaultProvider(
  env: NodeJS.ProcessEnv,
  options: { timeoutMs?: number } = {},
): Promise<DetectedProvider | undefined> {
  const fromEnv = envDefaultProvider(env);
  if (fromEnv) return { provider: fromEnv };
  const models = await listOllamaModels(env, options.timeoutMs ?? 300);
  if (!models) return undefined;
  return { provider: "ollama", ...(models[0] ? { model: models[0] } : {}) };
}

function openAIResponses(config: ProviderSelection): ProviderPlan | ProviderConfigProblem {
  const baseURL = config.env["OPENAI_BASE_URL"] || undefined;
  const apiKey = config.env["OPENAI_API_KEY"] || (baseURL && !isOfficialOpenAI(baseURL) ? NO_KEY_NEEDED : undefined);
  if (!apiKey) {
    return {
      problem:
        "The openai provider (Responses API) needs OPENAI_API_KEY. For a compatible server (Ollama, vLLM, llama.cpp, ...) use --provider openai-chat with OPENAI_BASE_URL.",
    };
  }
  const defaultModel = config.model || DEFAULT_MODELS.openai;
  return {
    name: "openai",
    defaultModel,
    build: async () => {
      const { OpenAIResponsesProvider } = await import("./openai-responses.js");
      return new OpenAIResponsesProvider({ apiKey, ...(baseURL ? { baseURL } : {}), defaultModel });
    },
  };
}

function openAIChat(config: ProviderSelection): ProviderPlan | ProviderConfigProblem {
  const baseURL = config.env["OPENAI_BASE_URL"] || undefined;
  const apiKey = config.env["OPENAI_API_KEY"] || (baseURL ? NO_KEY_NEEDED : undefined);
  if (!apiKey) {
    return {
      problem:
        "The openai-chat provider needs OPENAI_API_KEY, or OPENAI_BASE_URL pointing at a compatible server (e.g. http://localhost:11434/v1 for Ollama).",
    };
  }
  const defaultModel = config.model || DEFAULT_MODELS["openai-chat"];
  return {
    name: "openai-chat",
    defaultModel,
    build: async () => {
      const { OpenAIChatProvider } = await import("./openai-chat.js");
      return new OpenAIChatProvider({ apiKey, ...(baseURL ? { baseURL } : {}), defaultModel });
    },
  };
}

function anthropic(config: ProviderSelection): ProviderPlan | ProviderConfigProblem {
  const baseURL = config.env["ANTHROPIC_BASE_URL"] || undefined;
  const apiKey = config.env["ANTHROPIC_API_KEY"] || (baseURL ? NO_KEY_NEEDED : undefined);
  if (!apiKey) {
    return { problem: "The anthropic provider needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL pointing at a compatible server)." };
  }
  // Extended thinking stays off unless a budget is set (the config file's anthropic.thinkingBudgetTokens).
  const budget = Number.parseInt(config.env["SWITCHYARD_ANTHROPIC_THINKING_BUDGET_TOKENS"] ?? "", 10);
  const defaultModel = config.model || DEFAULT_MODELS.anthropic;
  return {
    name: "anthropic",
    defaultModel,
    build: async () => {
      const { AnthropicProvider } = await import("./anthropic.js");
      return new AnthropicProvider({
        apiKey,
        ...(baseURL ? { baseURL } : {}),
        defaultModel,
        // The API's minimum budget is 1024.
        ...(budget > 0 ? { thinkingBudgetTokens: Math.max(1024, budget) } : {}),
      });
    },
  };
}

/**
 * The script is checked when the provider is built, so a broken one is reported before any turn
 * runs. Its module loads only for this provider: it checks scripts with zod, which the other
 * providers do without.
 */
function scripted(config: ProviderSelection): ProviderPlan | ProviderConfigProblem {
  const file = config.model || config.env["SWITCHYARD_SCRIPT"];
  if (!file) {
    return {
      problem:
        "The scripted provider needs a script: start with --provider scripted --model ./path/to/script.json (or set SWITCHYARD_SCRIPT).",
    };
  }
  return {
    name: "scripted",
    defaultModel: file,
    build: async () => {
      const { ScriptedProvider, loadScript } = await import("./scripted.js");
      try {
        loadScript(file);
      } catch (error) {
        return { problem: (error as Error).message };
      }
      return new ScriptedProvider(file);
    },
  };
}
