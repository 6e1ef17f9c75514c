// The model provider interface: one streaming call per model turn, in a provider-neutral shape.
// Each provider adapts its official SDK to this.

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's arguments object. */
  parameters: Record<string, unknown>;
}

export interface ToolCallRequest {
  id: string;
  name: string;
  /** The raw JSON text of the arguments, as the model produced it. */
  argumentsText: string;
}

/** An image a message carries: a URL the provider fetches, or the bytes themselves. */
export type ImageSource = { kind: "url"; url: string } | { kind: "base64"; mediaType: string; data: string };

/** One piece of a user message, in order: text, or an image. */
export type UserContentPart = { type: "text"; text: string } | { type: "image"; source: ImageSource };

export type ConversationMessage =
  | {
      role: "user";
      /** The message as text: what providers send when there are no parts, token estimates, transcripts. */
      content: string;
      /** When present, the message to send, in order (its text parts and images); `content` is then its text rendering. */
      parts?: UserContentPart[];
    }
  | {
      role: "assistant";
      content: string;
      reasoning?: { text: string; signature?: string };
      toolCalls?: ToolCallRequest[];
    }
  | { role: "tool"; toolCallId: string; toolName: string; content: string; isError?: boolean };

/**
 * Reasoning signatures from the OpenAI Responses provider (its encrypted reasoning items) start
 * with this. A thread can switch providers; others must not send such a signature back.
 */
export const OPENAI_REASONING_PREFIX = "openai-responses:v1:";

export interface ModelRequest {
  model: string;
  system: string;
  messages: ConversationMessage[];
  tools: ToolSpec[];
  maxOutputTokens?: number;
  /**
   * "adaptive": the model decides whether and how much to think (Anthropic's adaptive thinking),
   * in place of the provider's configured thinking. Providers without such a mode ignore it.
   */
  thinking?: ThinkingMode;
}

export type ThinkingMode = "adaptive";

export interface UsageReport {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  reasoningTokens?: number;
}

export type StopReason = "end" | "toolCalls" | "maxTokens" | "other";

export type ModelStreamEvent =
  | { type: "textDelta"; delta: string }
  | { type: "reasoningDelta"; delta: string }
  /** Opaque data that must be sent back with the reasoning (Anthropic thinking signatures). */
  | { type: "reasoningSignature"; signature: string }
  | { type: "toolCallStart"; index: number; id: string; name: string }
  | { type: "toolCallDelta"; index: number; argumentsDelta: string }
  /**
   * A tool call's complete arguments, when the API sends them whole at the end. They replace what
   * the deltas carried: deltas are a preview, the finished call is the truth.
   */
  | { type: "toolCallArguments"; index: number; argumentsText: string }
  | { type: "usage"; usage: UsageReport }
  | { type: "stop"; reason: StopReason };

/** Why a model call failed, in words a client can act on. */
export type ProviderErrorCode =
  "noProvider" | "authentication" | "rateLimited" | "contextWindowExceeded" | "connection" | "providerError" | "invalidResponse";

export interface ProviderErrorOptions {
  /** How long the provider asked us to wait before trying again (retry-after headers). */
  retryAfterMs?: number;
}

export class ProviderError extends Error {
  /** How long the provider asked us to wait before trying again, when it said so. */
  readonly retryAfterMs?: number;

  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    readonly httpStatus?: number,
    /** True when the failure happened before the provider produced any output. */
    readonly beforeOutput = true,
    options: ProviderErrorOptions = {},
  ) {
    super(message);
    this.name = "ProviderError";
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

export interface ModelProvider {
  /** The provider name used in configuration, e.g. "openai", "openai-chat" or "anthropic". */
  readonly name: string;
  readonly defaultModel: string;
  /**
   * Streams one model response. Must stop promptly (and throw an AbortError-like error or
   * simply end) when `signal` aborts. Failures are thrown as ProviderError.
   */
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent>;
  /**
   * Loads what the first call needs (the SDK module, its client) and runs the streaming path
   * once without a request (warm-up.ts), so that call neither waits for the load nor compiles
   * that code. Optional; a failure here is only reported by the call that needs it.
   */
  prepare?(): Promise<void>;
}
