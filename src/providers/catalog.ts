// What Switchyard knows about models: context window, reasoning support and list prices.
// Live listings from a provider's models endpoint are merged over this table at run time.

export interface ModelPricing {
  /** USD per million input tokens (not counting cached ones). */
  inputPerMTok: number;
  outputPerMTok: number;
  /** USD per million cached input tokens, where the provider discounts them. */
  cachedInputPerMTok?: number;
}

export interface ModelInfo {
  id: string;
  provider: string;
  displayName?: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  reasoning: boolean;
  /** What the model takes as input; absent when unknown (a model only a live listing names). */
  inputModalities?: Array<"text" | "image">;
  pricing?: ModelPricing;
}

const VISION: Pick<ModelInfo, "inputModalities"> = { inputModalities: ["text", "image"] };
const TEXT_ONLY: Pick<ModelInfo, "inputModalities"> = { inputModalities: ["text"] };

// List prices as published by the providers; update when they change.
const KNOWN: ModelInfo[] = [
  {
    id: "gpt-4.1",
    provider: "openai",
    contextWindow: 1_047_576,
    maxOutputTokens: 32_768,
    reasoning: false,
    ...VISION,
    pricing: { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 },
  },
  {
    id: "gpt-4.1-mini",
    provider: "openai",
    contextWindow: 1_047_576,
    maxOutputTokens: 32_768,
    reasoning: false,
    ...VISION,
    pricing: { inputPerMTok: 0.4, outputPerMTok: 1.6, cachedInputPerMTok: 0.1 },
  },
  {
    id: "gpt-4o",
    provider: "openai",
    contextWindow: 128_000,
    maxOutputTokens: 16_384,
    reasoning: false,
    ...VISION,
    pricing: { inputPerMTok: 2.5, outputPerMTok: 10, cachedInputPerMTok: 1.25 },
  },
  {
    id: "gpt-5",
    provider: "openai",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 1.25, outputPerMTok: 10, cachedInputPerMTok: 0.125 },
  },
  {
    id: "gpt-5-mini",
    provider: "openai",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 0.25, outputPerMTok: 2, cachedInputPerMTok: 0.025 },
  },
  {
    id: "o3-mini",
    provider: "openai",
    contextWindow: 200_000,
    maxOutputTokens: 100_000,
    reasoning: true,
    ...TEXT_ONLY,
    pricing: { inputPerMTok: 1.1, outputPerMTok: 4.4, cachedInputPerMTok: 0.55 },
  },
  {
    id: "o4-mini",
    provider: "openai",
    contextWindow: 200_000,
    maxOutputTokens: 100_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 1.1, outputPerMTok: 4.4, cachedInputPerMTok: 0.275 },
  },
  {
    id: "claude-opus-4-6",
    provider: "anthropic",
    displayName: "Claude Opus 4.6",
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 5, outputPerMTok: 25, cachedInputPerMTok: 0.5 },
  },
  {
    id: "claude-sonnet-4-6",
    provider: "anthropic",
    displayName: "Claude Sonnet 4.6",
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3 },
  },
  {
    id: "claude-sonnet-4-5",
    provider: "anthropic",
    displayName: "Claude Sonnet 4.5",
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3 },
  },
  {
    id: "claude-haiku-4-5",
    provider: "anthropic",
    displayName: "Claude Haiku 4.5",
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    reasoning: true,
    ...VISION,
    pricing: { inputPerMTok: 1, outputPerMTok: 5, cachedInputPerMTok: 0.1 },
  },
];

/** The model a provider's turns use when nothing names one (Ollama's: its first installed model). */
export const DEFAULT_MODELS = { openai: "gpt-5", "openai-chat": "gpt-4.1", anthropic: "claude-sonnet-4-6" } as const;

/** Providers that serve OpenAI's models under another API share its catalog entries. */
function catalogProvider(provider: string): string {
  return provider === "openai-chat" ? "openai" : provider;
}

export function knownModels(provider?: string): ModelInfo[] {
  return provider === undefined ? [...KNOWN] : KNOWN.filter((m) => m.provider === catalogProvider(provider));
}

/** The catalog entry for a model id, also matching dated snapshots ("claude-sonnet-4-5-20250929"). */
export function lookupModel(provider: string, model: string): ModelInfo | undefined {
  const candidates = knownModels(provider);
  return candidates.find((m) => m.id === model) ?? candidates.find((m) => model.startsWith(`${m.id}-`));
}

/** Cost in USD of the given usage, or undefined when the model's pricing is unknown. */
export function costUsd(
  info: ModelInfo | undefined,
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number },
): number | undefined {
  const pricing = info?.pricing;
  if (!pricing) return undefined;
  const cached = usage.cachedInputTokens ?? 0;
  const uncached = Math.max(0, usage.inputTokens - cached);
  const cachedRate = pricing.cachedInputPerMTok ?? pricing.inputPerMTok;
  return (uncached * pricing.inputPerMTok + cached * cachedRate + usage.outputTokens * pricing.outputPerMTok) / 1_000_000;
}
