// Model provider for the Anthropic Messages API via the official `@anthropic-ai/sdk`.
//
// The SDK is imported lazily on the first call (startup cost); only types are imported here.
import type Anthropic from "@anthropic-ai/sdk";
import type {
  ConversationMessage,
  ImageSource,
  ModelProvider,
  ModelRequest,
  ModelStreamEvent,
  StopReason,
  ToolSpec,
  UsageReport,
} from "./provider.js";
import { OPENAI_REASONING_PREFIX, ProviderError } from "./provider.js";
import { apiFailure, connectionFailure, describeCause, messageFromBody, otherFailure, type SdkFailure } from "./sdk-errors.js";
import { streamFromSdk } from "./sdk-stream.js";
import { httpFetch } from "./http-fetch.js";
import { ANTHROPIC_ANSWER, warmUp } from "./warm-up.js";
import { DEFAULT_MODELS } from "./catalog.js";

type AnthropicModule = typeof import("@anthropic-ai/sdk");
type AnthropicSdk = { mod: AnthropicModule; client: Anthropic };
type MessageParam = Anthropic.Messages.MessageParam;
type ContentBlockParam = Anthropic.Messages.ContentBlockParam;
type StreamEvent = Anthropic.Messages.RawMessageStreamEvent;
type ApiTool = Anthropic.Messages.Tool;

export interface AnthropicOptions {
  /** Defaults to ANTHROPIC_API_KEY (read by the SDK). */
  apiKey?: string;
  /** Defaults to ANTHROPIC_BASE_URL, then https://api.anthropic.com (read by the SDK). */
  baseURL?: string;
  defaultModel?: string;
  /** The SDK's own retries. Default 0: withRetries (retry.ts) is the one retry policy. */
  maxRetries?: number;
  /** Enables extended thinking with this budget (min 1024). Off when unset. */
  thinkingBudgetTokens?: number;
}

const ANTHROPIC_DEFAULT_BASE = "https://api.anthropic.com";
const DEFAULT_MAX_TOKENS = 8192;
const ADAPTIVE_MAX_TOKENS = 16384;

export class AnthropicProvider implements ModelProvider {
  readonly name = "anthropic";
  readonly defaultModel: string;
  private sdk?: Promise<AnthropicSdk>;

  constructor(private readonly options: AnthropicOptions = {}) {
    this.defaultModel = options.defaultModel ?? DEFAULT_MODELS.anthropic;
  }

  /** Loads the SDK and runs the streaming path once on an answer made in memory (warm-up.ts). */
  async prepare(): Promise<void> {
    await warmUp(await this.load(), ANTHROPIC_ANSWER, (load, request, signal) => this.streamWith(load, request, signal));
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    return this.streamWith(() => this.load(), request, signal);
  }

  private streamWith(load: () => Promise<AnthropicSdk>, request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    const mapper = new EventMapper();
    return streamFromSdk({
      signal,
      service: describeService(this.options.baseURL ?? process.env["ANTHROPIC_BASE_URL"]),
      load,
      describeService: (sdk) => describeService(sdk.client.baseURL),
      open: (sdk) => sdk.client.messages.create(buildRequest(request, this.defaultModel, this.options.thinkingBudgetTokens), { signal }),
      map: (event) => mapper.push(event),
      complete: () => mapper.stopped,
      missingEnd: "before message_stop",
      finish: () => mapper.finish(),
      describeFailure: (error, sdk) => describeFailure(error, sdk?.mod),
    });
  }

  private load(): Promise<AnthropicSdk> {
    this.sdk ??= import("@anthropic-ai/sdk").then((mod) => {
      try {
        const { apiKey, baseURL } = this.options;
        return { mod, client: new mod.default({ apiKey, baseURL, maxRetries: this.options.maxRetries ?? 0, fetch: httpFetch }) };
      } catch (error) {
        throw new ProviderError("authentication", `The Anthropic client could not be created: ${describeCause(error)}`);
      }
    });
    // A failed load must not be cached forever: the environment may be fixed later.
    this.sdk.catch(() => (this.sdk = undefined));
    return this.sdk;
  }
}

function describeService(baseURL: string | undefined): string {
  const base = baseURL?.replace(/\/+$/, "");
  return !base || base === ANTHROPIC_DEFAULT_BASE ? "the Anthropic API" : `the Anthropic-compatible server at ${base}`;
}

function buildRequest(request: ModelRequest, defaultModel: string, configuredBudget: number | undefined) {
  const adaptive = request.thinking === "adaptive";
  // Adaptive thinking replaces a configured budget for this request.
  const thinkingBudget = adaptive ? undefined : configuredBudget;
  // Adaptive thinking counts toward max_tokens like the answer does: leave room for both.
  let maxTokens = request.maxOutputTokens ?? (adaptive ? ADAPTIVE_MAX_TOKENS : DEFAULT_MAX_TOKENS);
  // The API requires max_tokens > budget_tokens; the budget comes on top of the answer.
  if (thinkingBudget !== undefined && maxTokens <= thinkingBudget) maxTokens += thinkingBudget;
  const tools = request.tools.map(toApiTool);
  const thinking = adaptive
    ? { thinking: { type: "adaptive" as const } }
    : thinkingBudget !== undefined
      ? { thinking: { type: "enabled" as const, budget_tokens: thinkingBudget } }
      : {};
  return {
    model: request.model || defaultModel,
    max_tokens: maxTokens,
    messages: toApiMessages(request.messages),
    ...(request.system ? { system: request.system } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...thinking,
    stream: true as const,
  };
}

function toApiTool(tool: ToolSpec): ApiTool {
  return { name: tool.name, description: tool.description, input_schema: { ...tool.parameters, type: "object" } };
}

/**
 * Conversation -> Messages API turns. Tool results travel as tool_result blocks in a user turn;
 * consecutive tool results (and a user message right after them) share one user turn, with the
 * tool_result blocks first as the API requires.
 */
function toApiMessages(messages: ConversationMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  const userBlocks = (): ContentBlockParam[] => {
    const last = out[out.length - 1];
    if (last?.role === "user" && Array.isArray(last.content)) return last.content;
    const turn: MessageParam = { role: "user", content: [] };
    out.push(turn);
    return turn.content as ContentBlockParam[];
  };
  for (const message of messages) {
    switch (message.role) {
      case "tool":
        userBlocks().push({
          type: "tool_result",
          tool_use_id: message.toolCallId,
          // The API rejects empty text; an absent content is fine.
          ...(message.content ? { content: message.content } : {}),
          ...(message.isError ? { is_error: true } : {}),
        });
        break;
      case "user":
        if (message.parts) {
          for (const part of message.parts) {
            if (part.type === "image") userBlocks().push({ type: "image", source: imageSource(part.source) });
            else if (part.text) userBlocks().push({ type: "text", text: part.text });
          }
        } else if (message.content) userBlocks().push({ type: "text", text: message.content });
        break;
      case "assistant": {
        const blocks: ContentBlockParam[] = [];
        // Thinking must come back first and unmodified, and only signed thinking is accepted
        // (signed by Anthropic: not another provider's reasoning from earlier in the thread).
        const signature = message.reasoning?.signature;
        if (message.reasoning && signature && !signature.startsWith(OPENAI_REASONING_PREFIX)) {
          blocks.push({ type: "thinking", thinking: message.reasoning.text, signature });
        }
        if (message.content) blocks.push({ type: "text", text: message.content });
        for (const call of message.toolCalls ?? []) {
          blocks.push({ type: "tool_use", id: call.id, name: call.name, input: parseToolInput(call.argumentsText) });
        }
        // An assistant turn with nothing in it would be rejected; dropping it loses nothing.
        if (blocks.length > 0) out.push({ role: "assistant", content: blocks });
        break;
      }
    }
  }
  return out;
}

function imageSource(source: ImageSource): Anthropic.Messages.ImageBlockParam["source"] {
  if (source.kind === "url") return { type: "url", url: source.url };
  return { type: "base64", media_type: source.mediaType as "image/jpeg" | "image/png" | "image/gif" | "image/webp", data: source.data };
}

/** tool_use input must be a JSON object; unparseable arguments are sent as {} (the tool result explains). */
function parseToolInput(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text || "{}");
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

interface RawUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

/** Maps raw Messages stream events to provider-neutral events. */
class EventMapper {
  stopped = false;
  private stopReason: string | null = null;
  private usage: RawUsage = {};
  /** Content block index -> tool call ordinal, the input the start carried, whether deltas followed. */
  private readonly toolBlocks = new Map<number, { ordinal: number; input?: string; streamed: boolean }>();

  push(event: StreamEvent): ModelStreamEvent[] {
    switch (event.type) {
      case "message_start":
        this.mergeUsage(event.message.usage);
        return [];
      case "message_delta":
        // message_delta usage is cumulative; fields it leaves null keep their message_start value.
        this.mergeUsage(event.usage);
        this.stopReason = event.delta.stop_reason ?? this.stopReason;
        return [];
      case "message_stop":
        this.stopped = true;
        return [];
      case "content_block_start": {
        const block = event.content_block;
        if (block.type === "tool_use") {
          const ordinal = this.toolBlocks.size;
          const input =
            block.input && typeof block.input === "object" && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : undefined;
          this.toolBlocks.set(event.index, { ordinal, ...(input ? { input } : {}), streamed: false });
          return [{ type: "toolCallStart", index: ordinal, id: block.id, name: block.name }];
        }
        // Blocks normally start empty, but pass on any content a server puts in the start.
        if (block.type === "text" && block.text) return [{ type: "textDelta", delta: block.text }];
        if (block.type === "thinking" && block.thinking) return [{ type: "reasoningDelta", delta: block.thinking }];
        return [];
      }
      case "content_block_delta": {
        const delta = event.delta;
        switch (delta.type) {
          case "text_delta":
            return delta.text ? [{ type: "textDelta", delta: delta.text }] : [];
          case "thinking_delta":
            return delta.thinking ? [{ type: "reasoningDelta", delta: delta.thinking }] : [];
          case "signature_delta":
            return [{ type: "reasoningSignature", signature: delta.signature }];
          case "input_json_delta": {
            const block = this.toolBlocks.get(event.index);
            if (!block || !delta.partial_json) return [];
            block.streamed = true;
            return [{ type: "toolCallDelta", index: block.ordinal, argumentsDelta: delta.partial_json }];
          }
          default:
            return [];
        }
      }
      case "content_block_stop": {
        // Some servers and proxies put the whole input in the tool_use block's start and stream
        // no deltas: that input is the call's arguments.
        const block = this.toolBlocks.get(event.index);
        return block?.input && !block.streamed ? [{ type: "toolCallArguments", index: block.ordinal, argumentsText: block.input }] : [];
      }
      default:
        return [];
    }
  }

  /** The closing events: one usage report, then stop. */
  finish(): ModelStreamEvent[] {
    return [
      { type: "usage", usage: mapUsage(this.usage) },
      { type: "stop", reason: mapStop(this.stopReason) },
    ];
  }

  private mergeUsage(usage: RawUsage | null | undefined): void {
    if (!usage) return;
    for (const [key, value] of Object.entries(usage) as Array<[keyof RawUsage, unknown]>) {
      if (value !== null && value !== undefined) (this.usage as Record<string, unknown>)[key] = value;
    }
  }
}

function mapUsage(usage: RawUsage): UsageReport {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const cacheWrite = usage.cache_creation_input_tokens ?? 0;
  const thinking = usage.output_tokens_details?.thinking_tokens ?? 0;
  return {
    // input_tokens counts only uncached input; report the whole prompt like OpenAI does.
    inputTokens: (usage.input_tokens ?? 0) + cacheRead + cacheWrite,
    outputTokens: usage.output_tokens ?? 0,
    ...(cacheRead ? { cachedInputTokens: cacheRead } : {}),
    ...(thinking ? { reasoningTokens: thinking } : {}),
  };
}

function mapStop(reason: string | null): StopReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "end";
    case "tool_use":
      return "toolCalls";
    case "max_tokens":
      return "maxTokens";
    default:
      return "other";
  }
}

/** Reads what an Anthropic SDK error says; `mod` is absent when the SDK itself failed to load. */
function describeFailure(error: unknown, mod: AnthropicModule | undefined): SdkFailure {
  if (mod && error instanceof mod.APIConnectionError) return connectionFailure(error);
  // `error.error` is the whole body: {"type":"error","error":{"type","message"}}.
  if (mod && error instanceof mod.APIError)
    return apiFailure(error, {
      apiMessage: error.apiMessage ?? messageFromBody(error.error),
      apiType: error.type,
      apiCode: error.errorCode,
    });
  return otherFailure(error);
}
