// Model provider for the OpenAI Chat Completions API and the many servers that mimic it
// (Ollama, vLLM, llama.cpp, DeepSeek, OpenRouter, ...), via the official `openai` SDK.
//
// The SDK is imported lazily on the first call: loading it costs noticeable startup time and
// a server that never talks to OpenAI should not pay for it. Only types are imported here.
import type OpenAI from "openai";
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
import {
  LazyOpenAIClient,
  describeOpenAIFailure,
  describeOpenAIService,
  type OpenAIClientOptions,
  type OpenAISdk,
} from "./openai-client.js";
import { isOfficialOpenAI } from "./endpoints.js";
import { streamFromSdk } from "./sdk-stream.js";
import { CHAT_ANSWER, warmUp } from "./warm-up.js";
import { DEFAULT_MODELS } from "./catalog.js";

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ChatTool = OpenAI.Chat.Completions.ChatCompletionTool;
type ChatChunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type ChatUsage = OpenAI.Completions.CompletionUsage;
type ChatDelta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta;
type ChatToolCallDelta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall;

export interface OpenAIChatOptions extends OpenAIClientOptions {
  defaultModel?: string;
  /** The provider name reported to the runtime. Default "openai-chat"; "ollama" for Ollama. */
  name?: string;
  /** Names the server in messages, e.g. "Ollama" -> "Could not reach Ollama at <baseURL>". */
  serviceLabel?: string;
}

export class OpenAIChatProvider implements ModelProvider {
  readonly name: string;
  readonly defaultModel: string;
  private readonly client: LazyOpenAIClient;

  constructor(private readonly options: OpenAIChatOptions = {}) {
    this.name = options.name ?? "openai-chat";
    this.defaultModel = options.defaultModel ?? DEFAULT_MODELS["openai-chat"];
    this.client = new LazyOpenAIClient(options);
  }

  /** Loads the SDK and runs the streaming path once on an answer made in memory (warm-up.ts). */
  async prepare(): Promise<void> {
    await warmUp(await this.client.load(), CHAT_ANSWER, (load, request, signal) => this.streamWith(load, request, signal));
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    return this.streamWith(() => this.client.load(), request, signal);
  }

  private streamWith(load: () => Promise<OpenAISdk>, request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    const label = this.options.serviceLabel;
    const mapper = new ChunkMapper();
    return streamFromSdk({
      signal,
      service: describeOpenAIService(this.options.baseURL ?? process.env["OPENAI_BASE_URL"], label),
      load,
      describeService: (sdk) => describeOpenAIService(sdk.client.baseURL, label),
      open: (sdk) =>
        sdk.client.chat.completions.create(buildRequest(request, this.defaultModel, !isOfficialOpenAI(sdk.client.baseURL)), { signal }),
      map: (chunk) => mapper.push(chunk),
      complete: () => mapper.finishReason !== undefined,
      missingEnd: "without a finish reason",
      finish: () => mapper.finish(),
      describeFailure: (error, sdk) => describeOpenAIFailure(error, sdk?.mod),
    });
  }
}

function buildRequest(request: ModelRequest, defaultModel: string, compatibleServer: boolean) {
  const messages: ChatMessage[] = [];
  if (request.system) messages.push({ role: "system", content: request.system });
  for (const message of request.messages) messages.push(toChatMessage(message));
  const tools = request.tools.map(toChatTool);
  // api.openai.com wants max_completion_tokens (reasoning models reject max_tokens); compatible
  // servers widely understand only max_tokens.
  const limit =
    request.maxOutputTokens === undefined
      ? {}
      : compatibleServer
        ? { max_tokens: request.maxOutputTokens }
        : { max_completion_tokens: request.maxOutputTokens };
  return {
    model: request.model || defaultModel,
    messages,
    // Some compatible servers reject an empty tools array.
    ...(tools.length > 0 ? { tools } : {}),
    ...limit,
    stream: true as const,
    stream_options: { include_usage: true },
  };
}

function toChatMessage(message: ConversationMessage): ChatMessage {
  switch (message.role) {
    case "user":
      if (!message.parts) return { role: "user", content: message.content };
      return {
        role: "user",
        content: message.parts.map((part) =>
          part.type === "text"
            ? { type: "text" as const, text: part.text }
            : { type: "image_url" as const, image_url: { url: imageUrl(part.source) } },
        ),
      };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant": {
      // Reasoning is not sent back: Chat Completions has no field for it, and DeepSeek-style
      // servers reject reasoning_content in input messages.
      const calls = message.toolCalls ?? [];
      return {
        role: "assistant",
        // null (not "") when the turn was only tool calls, as the API itself returns it.
        content: message.content || (calls.length > 0 ? null : ""),
        ...(calls.length > 0
          ? {
              tool_calls: calls.map((call) => ({
                id: call.id,
                type: "function" as const,
                function: { name: call.name, arguments: call.argumentsText || "{}" },
              })),
            }
          : {}),
      };
    }
  }
}

/** An image as a URL: the bytes go as a data: URL. */
export function imageUrl(source: ImageSource): string {
  return source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`;
}

function toChatTool(tool: ToolSpec): ChatTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** Delta fields that compatible servers add for reasoning models (not in the SDK's types). */
interface ReasoningFields {
  reasoning_content?: string | null;
  reasoning?: string | null;
}

interface PendingCall {
  ordinal: number;
  id?: string;
  name?: string;
  started: boolean;
  /** Argument text received before the name (some servers split id/name/arguments). */
  buffered: string;
}

/** Maps chat.completion.chunk objects to provider-neutral events. */
class ChunkMapper {
  finishReason?: string;
  private usage?: ChatUsage;
  private readonly calls = new Map<number, PendingCall>();
  private nextOrdinal = 0;

  push(chunk: ChatChunk): ModelStreamEvent[] {
    const events: ModelStreamEvent[] = [];
    // The usage chunk comes last with empty choices; some servers put it on the finish chunk.
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0]; // servers may send choices: null on the usage chunk
    if (!choice) return events;
    const delta = (choice.delta ?? {}) as ChatDelta & ReasoningFields;
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === "string" && reasoning) events.push({ type: "reasoningDelta", delta: reasoning });
    if (delta.content) events.push({ type: "textDelta", delta: delta.content });
    for (const part of delta.tool_calls ?? []) this.pushToolCall(part, events);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return events;
  }

  private pushToolCall(part: ChatToolCallDelta, events: ModelStreamEvent[]): void {
    const key = part.index ?? 0;
    let call = this.calls.get(key);
    // A different id at a known index means a new call (servers that always send index 0).
    if (!call || (part.id && call.id && part.id !== call.id)) {
      call = { ordinal: this.nextOrdinal++, started: false, buffered: "" };
      this.calls.set(key, call);
    }
    if (part.id) call.id ??= part.id;
    if (part.function?.name) call.name ??= part.function.name;
    const args = part.function?.arguments ?? "";
    if (call.started) {
      if (args) events.push({ type: "toolCallDelta", index: call.ordinal, argumentsDelta: args });
      return;
    }
    call.buffered += args;
    if (!call.name) return;
    call.started = true;
    const id = call.id ?? `call_${Date.now().toString(36)}_${call.ordinal}`;
    events.push({ type: "toolCallStart", index: call.ordinal, id, name: call.name });
    if (call.buffered) events.push({ type: "toolCallDelta", index: call.ordinal, argumentsDelta: call.buffered });
    call.buffered = "";
  }

  /** The closing events: usage (when reported), then stop. */
  finish(): ModelStreamEvent[] {
    const events: ModelStreamEvent[] = [];
    if (this.usage) events.push({ type: "usage", usage: mapUsage(this.usage) });
    events.push({ type: "stop", reason: mapStop(this.finishReason) });
    return events;
  }
}

function mapUsage(usage: ChatUsage): UsageReport {
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  return {
    inputTokens: usage.prompt_tokens ?? 0,
    outputTokens: usage.completion_tokens ?? 0,
    ...(cached ? { cachedInputTokens: cached } : {}),
    ...(reasoning ? { reasoningTokens: reasoning } : {}),
  };
}

function mapStop(reason: string | undefined): StopReason {
  switch (reason) {
    case "stop":
      return "end";
    case "tool_calls":
      return "toolCalls";
    case "length":
      return "maxTokens";
    default:
      return "other";
  }
}
