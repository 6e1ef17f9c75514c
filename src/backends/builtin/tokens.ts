// A cheap, deterministic estimate of how many input tokens a model request costs. It only has
// to be good enough to keep requests inside the context window with a margin: real counts need
// the provider's tokenizer, which we do not ship. Where a provider reported the real count of a
// previous request, `calibrationFactor` scales the estimate up to match.
import type { ConversationMessage, ModelRequest } from "../../providers/provider.js";

/** Characters per token of English prose and code with the common BPE tokenizers (a rule of thumb). */
export const CHARS_PER_TOKEN = 4;
/** Role markers and framing the APIs wrap around every message. */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** What one image costs, roughly (a 1,000 x 1,000 picture is ~1,300 tokens with Anthropic, ~800 with OpenAI). */
export const IMAGE_TOKENS = 1_500;
/** Calibration never scales the estimate by more than this (a provider reporting nonsense). */
const MAX_CALIBRATION = 4;

export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * One message: its text, reasoning, tool-call names and arguments, rounded up per message so
 * that the estimate of a conversation is the sum of its messages' estimates (the cut-point
 * choice relies on that).
 */
export function estimateMessageTokens(message: ConversationMessage): number {
  let chars = message.content.length;
  if (message.role === "assistant") {
    chars += message.reasoning?.text.length ?? 0;
    for (const call of message.toolCalls ?? []) chars += call.id.length + call.name.length + call.argumentsText.length;
  } else if (message.role === "user") {
    for (const part of message.parts ?? []) if (part.type === "image") chars += IMAGE_TOKENS * CHARS_PER_TOKEN;
  } else if (message.role === "tool") {
    chars += message.toolCallId.length + message.toolName.length;
  }
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(chars / CHARS_PER_TOKEN);
}

/** The part every request carries regardless of the conversation: system prompt and tool specs. */
export function estimateFixedTokens(request: Pick<ModelRequest, "system" | "tools">): number {
  const tools = request.tools.length > 0 ? estimateTextTokens(JSON.stringify(request.tools)) : 0;
  return estimateTextTokens(request.system) + tools;
}

export function estimateRequestTokens(request: Pick<ModelRequest, "system" | "tools" | "messages">): number {
  return request.messages.reduce((sum, message) => sum + estimateMessageTokens(message), estimateFixedTokens(request));
}

/**
 * The factor to multiply estimates by, given a request's estimate and the input tokens the
 * provider reported for it. Only ever >= 1: an estimate that runs high merely compacts a bit
 * early, one that runs low (dense code, non-Latin scripts) risks an overflow, so only that is
 * corrected.
 */
export function calibrationFactor(estimated: number, reported: number): number {
  if (!(estimated > 0) || !(reported > 0)) return 1;
  return Math.min(MAX_CALIBRATION, Math.max(1, reported / estimated));
}
