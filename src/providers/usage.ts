// Token usage arithmetic: one model call's usage (with its cost) and sums over calls and turns.
import { costUsd, type ModelInfo } from "./catalog.js";
import type { UsageReport } from "./provider.js";
import type { TokenUsage } from "../domain/model.js";

/** One model call's usage, priced when the catalog knows the model's prices. */
export function callUsage(report: UsageReport, model: ModelInfo | undefined): TokenUsage {
  const cost = costUsd(model, report);
  return {
    inputTokens: report.inputTokens,
    outputTokens: report.outputTokens,
    totalTokens: report.inputTokens + report.outputTokens,
    ...(report.cachedInputTokens !== undefined ? { cachedInputTokens: report.cachedInputTokens } : {}),
    ...(report.reasoningTokens !== undefined ? { reasoningTokens: report.reasoningTokens } : {}),
    ...(cost !== undefined ? { costUsd: roundUsd(cost) } : {}),
  };
}

/**
 * The sum of two usages. Optional counts are present when either side has them. The cost is
 * present only when both sides have one: a total that silently leaves out unpriced calls
 * would look exact while it is not.
 */
export function addUsage(a: TokenUsage | undefined, b: TokenUsage): TokenUsage {
  if (!a) return b;
  const sum = (x: number | undefined, y: number | undefined): number | undefined =>
    x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0);
  const cachedInputTokens = sum(a.cachedInputTokens, b.cachedInputTokens);
  const reasoningTokens = sum(a.reasoningTokens, b.reasoningTokens);
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    ...(cachedInputTokens !== undefined ? { cachedInputTokens } : {}),
    ...(reasoningTokens !== undefined ? { reasoningTokens } : {}),
    ...(a.costUsd !== undefined && b.costUsd !== undefined ? { costUsd: roundUsd(a.costUsd + b.costUsd) } : {}),
  };
}

/** Rounded to 1e-10 USD, so sums of prices read as the decimals they are (0.003, not 0.0030000000000000005). */
function roundUsd(value: number): number {
  return Math.round(value * 1e10) / 1e10;
}
