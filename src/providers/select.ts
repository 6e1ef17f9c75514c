// Chooses and builds the model provider from configuration and environment. Importing this
// module does not load either SDK: the providers import theirs on the first model call.
import { AnthropicProvider } from "./anthropic.js";
import { OpenAIChatProvider } from "./openai-chat.js";
import type { ModelProvider } from "./provider.js";

/** Why no provider could be built, in words meant for the person starting the server. */
export interface ProviderConfigProblem {
  problem: string;
}

export interface ProviderSelection {
  /** "openai-chat" or "anthropic" ("openai" is accepted as an alias of "openai-chat"). */
  provider?: string;
  model?: string;
  env: NodeJS.ProcessEnv;
}

export const PROVIDER_NAMES = ["openai-chat", "anthropic"] as const;

/** Placeholder key for local servers (Ollama, vLLM, ...) that ignore authentication. */
const NO_KEY_NEEDED = "not-needed";

export function createProvider(config: ProviderSelection): ModelProvider | ProviderConfigProblem {
  const { env } = config;
  const requested = config.provider?.trim().toLowerCase();
  const name = requested === "openai" ? "openai-chat" : requested;
  switch (name) {
    case "openai-chat":
      return openAI(config);
    case "anthropic":
      return anthropic(config);
    case undefined:
    case "":
      if (env["ANTHROPIC_API_KEY"]) return anthropic(config);
      if (env["OPENAI_API_KEY"] || env["OPENAI_BASE_URL"]) return openAI(config);
      return {
        problem:
          "No model provider is configured. Set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or ANTHROPIC_API_KEY, or start with --provider <openai-chat|anthropic> --model <name>.",
      };
    default:
      return { problem: `Unknown model provider "${config.provider}". Valid providers are: ${PROVIDER_NAMES.join(", ")} ("openai" also means openai-chat).` };
  }
}

export function isProviderConfigProblem(value: ModelProvider | ProviderConfigProblem): value is ProviderConfigProblem {
  return "problem" in value;
}

function openAI(config: ProviderSelection): ModelProvider | ProviderConfigProblem {
  const baseURL = config.env["OPENAI_BASE_URL"] || undefined;
  const apiKey = config.env["OPENAI_API_KEY"] || (baseURL ? NO_KEY_NEEDED : undefined);
  if (!apiKey) {
    return { problem: "The openai-chat provider needs OPENAI_API_KEY, or OPENAI_BASE_URL pointing at a compatible server (e.g. http://localhost:11434/v1 for Ollama)." };
  }
  return new OpenAIChatProvider({ apiKey, ...(baseURL ? { baseURL } : {}), ...(config.model ? { defaultModel: config.model } : {}), maxRetries: 2 });
}

function anthropic(config: ProviderSelection): ModelProvider | ProviderConfigProblem {
  const baseURL = config.env["ANTHROPIC_BASE_URL"] || undefined;
  const apiKey = config.env["ANTHROPIC_API_KEY"] || (baseURL ? NO_KEY_NEEDED : undefined);
  if (!apiKey) {
    return { problem: "The anthropic provider needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL pointing at a compatible server)." };
  }
  return new AnthropicProvider({ apiKey, ...(baseURL ? { baseURL } : {}), ...(config.model ? { defaultModel: config.model } : {}), maxRetries: 2 });
}
