// Model provider for the OpenAI Responses API (POST /v1/responses), OpenAI's own API for its
// current models, via the official `openai` SDK (imported lazily, see openai-client.ts).
//
// Stateless use: `store: false`, and every request carries the whole conversation. Reasoning
// models' reasoning is requested with its encrypted content, which travels in the reasoning
// signature and goes back as `reasoning` input items, so the model keeps its chain of thought
// across tool calls without the server storing anything.
import type OpenAI from "openai";
import { DEFAULT_MODELS, lookupModel } from "./catalog.js";
import type { ConversationMessage, ModelProvider, ModelRequest, ModelStreamEvent, StopReason, ToolSpec, UsageReport } from "./provider.js";
import { OPENAI_REASONING_PREFIX } from "./provider.js";
import { imageUrl } from "./openai-chat.js";
import {
  LazyOpenAIClient,
  describeOpenAIFailure,
  describeOpenAIService,
  type OpenAIClientOptions,
  type OpenAISdk,
} from "./openai-client.js";
import { streamFromSdk } from "./sdk-stream.js";
import { RESPONSES_ANSWER, warmUp } from "./warm-up.js";

type StreamEvent = OpenAI.Responses.ResponseStreamEvent;
type InputItem = OpenAI.Responses.ResponseInputItem;
type FunctionTool = OpenAI.Responses.FunctionTool;
type ReasoningItem = OpenAI.Responses.ResponseReasoningItem;
type ApiResponse = OpenAI.Responses.Response;
type CreateParams = OpenAI.Responses.ResponseCreateParamsStreaming;

export interface OpenAIResponsesOptions extends OpenAIClientOptions {
  defaultModel?: string;
}

export class OpenAIResponsesProvider implements ModelProvider {
  readonly name = "openai";
  readonly defaultModel: string;
  private readonly client: LazyOpenAIClient;

  constructor(private readonly options: OpenAIResponsesOptions = {}) {
    this.defaultModel = options.defaultModel ?? DEFAULT_MODELS.openai;
    this.client = new LazyOpenAIClient(options);
  }

  /** Loads the SDK and runs the streaming path once on an answer made in memory (warm-up.ts). */
  async prepare(): Promise<void> {
    await warmUp(await this.client.load(), RESPONSES_ANSWER, (load, request, signal) => this.streamWith(load, request, signal));
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    return this.streamWith(() => this.client.load(), request, signal);
  }

  private streamWith(load: () => Promise<OpenAISdk>, request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    const mapper = new EventMapper();
    return streamFromSdk({
      signal,
      service: describeOpenAIService(this.options.baseURL ?? process.env["OPENAI_BASE_URL"]),
      load,
      describeService: (sdk) => describeOpenAIService(sdk.client.baseURL),
      open: (sdk) => sdk.client.responses.create(buildRequest(request, this.defaultModel), { signal }),
      map: (event) => mapper.push(event),
      failureIn: (event) => mapper.failure(event),
      complete: () => mapper.final !== undefined,
      missingEnd: "before response.completed",
      finish: () => mapper.finish(),
      describeFailure: (error, sdk) => describeOpenAIFailure(error, sdk?.mod),
    });
  }
}

function buildRequest(request: ModelRequest, defaultModel: string): CreateParams {
  const model = request.model || defaultModel;
  // Reasoning parameters are rejected by models that do not reason, so only known reasoners get them.
  const reasons = lookupModel("openai", model)?.reasoning === true;
  const tools = request.tools.map(toTool);
  return {
    model,
    ...(request.system ? { instructions: request.system } : {}),
    input: toInput(request.messages),
    ...(tools.length > 0 ? { tools } : {}),
    ...(request.maxOutputTokens !== undefined ? { max_output_tokens: request.maxOutputTokens } : {}),
    store: false,
    ...(reasons ? { reasoning: { effort: "medium", summary: "auto" }, include: ["reasoning.encrypted_content"] } : {}),
    stream: true,
  };
}

function toTool(tool: ToolSpec): FunctionTool {
  // strict: false because our schemas have optional properties, which strict mode forbids.
  return { type: "function", name: tool.name, description: tool.description, parameters: tool.parameters, strict: false };
}

function toInput(messages: ConversationMessage[]): InputItem[] {
  const items: InputItem[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        items.push({
          type: "message",
          role: "user",
          content: message.parts
            ? message.parts.map((part) =>
                part.type === "text"
                  ? { type: "input_text" as const, text: part.text }
                  : { type: "input_image" as const, image_url: imageUrl(part.source), detail: "auto" as const },
              )
            : message.content,
        });
        break;
      case "tool":
        // No error flag in this API: the output text says what went wrong.
        items.push({ type: "function_call_output", call_id: message.toolCallId, output: message.content });
        break;
      case "assistant":
        // In the order the model produced them: reasoning, text, function calls.
        items.push(...decodeReasoning(message.reasoning?.signature));
        if (message.content) items.push({ type: "message", role: "assistant", content: message.content });
        for (const call of message.toolCalls ?? []) {
          items.push({ type: "function_call", call_id: call.id, name: call.name, arguments: call.argumentsText || "{}" });
        }
        break;
    }
  }
  return items;
}

/** A reasoning item as we keep it in the signature: no id, since with store:false ids refer to nothing. */
type KeptReasoning = Pick<ReasoningItem, "summary" | "encrypted_content">;

function encodeReasoning(items: KeptReasoning[]): string {
  return OPENAI_REASONING_PREFIX + JSON.stringify(items);
}

/** The reasoning items in a signature we wrote; nothing for other providers' signatures or damaged ones. */
function decodeReasoning(signature: string | undefined): InputItem[] {
  if (!signature?.startsWith(OPENAI_REASONING_PREFIX)) return [];
  try {
    const kept: unknown = JSON.parse(signature.slice(OPENAI_REASONING_PREFIX.length));
    if (!Array.isArray(kept)) return [];
    return kept.flatMap((item: Partial<KeptReasoning>) =>
      typeof item?.encrypted_content === "string"
        ? // The SDK's type insists on an id, which the API must not get here (see KeptReasoning).
          [
            {
              type: "reasoning",
              summary: Array.isArray(item.summary) ? item.summary : [],
              encrypted_content: item.encrypted_content,
            } as ReasoningItem,
          ]
        : [],
    );
  } catch {
    return [];
  }
}

interface Failure {
  apiMessage?: string;
  apiCode?: string;
  apiType?: string;
  retryAfterMs?: number;
}

/** Maps Responses stream events to provider-neutral events. */
class EventMapper {
  /** The response.completed / response.incomplete response, once it arrived. */
  final?: ApiResponse;
  /** output_index -> tool call ordinal. */
  private readonly calls = new Map<number, { ordinal: number }>();
  private readonly reasoning: KeptReasoning[] = [];
  private summaryParts = 0;

  /** The failure an event reports (response.failed, error), else undefined. */
  failure(event: StreamEvent): Failure | undefined {
    if (event.type === "response.failed") {
      const error = event.response.error;
      return describeStreamError(error?.message, error?.code ?? undefined);
    }
    if (event.type === "error") return describeStreamError(event.message, event.code ?? undefined);
    return undefined;
  }

  push(event: StreamEvent): ModelStreamEvent[] {
    switch (event.type) {
      case "response.output_text.delta":
      case "response.refusal.delta":
        return event.delta ? [{ type: "textDelta", delta: event.delta }] : [];
      case "response.reasoning_summary_part.added":
        // Summaries come in parts (one per topic); keep them apart as paragraphs.
        return this.summaryParts++ > 0 ? [{ type: "reasoningDelta", delta: "\n\n" }] : [];
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta": // raw reasoning, from compatible servers with open models
        return event.delta ? [{ type: "reasoningDelta", delta: event.delta }] : [];
      case "response.output_item.added": {
        const item = event.item;
        if (item.type !== "function_call") return [];
        const ordinal = this.calls.size;
        this.calls.set(event.output_index, { ordinal });
        const start: ModelStreamEvent = { type: "toolCallStart", index: ordinal, id: item.call_id, name: item.name };
        return item.arguments ? [start, { type: "toolCallDelta", index: ordinal, argumentsDelta: item.arguments }] : [start];
      }
      case "response.function_call_arguments.delta": {
        const call = this.calls.get(event.output_index);
        if (!call || !event.delta) return [];
        return [{ type: "toolCallDelta", index: call.ordinal, argumentsDelta: event.delta }];
      }
      case "response.function_call_arguments.done": {
        const call = this.calls.get(event.output_index);
        return call && event.arguments ? [{ type: "toolCallArguments", index: call.ordinal, argumentsText: event.arguments }] : [];
      }
      case "response.output_item.done": {
        const item = event.item;
        if (item.type === "function_call") return this.finishedCall(event.output_index, item);
        if (item.type !== "reasoning" || !item.encrypted_content) return [];
        this.reasoning.push({ summary: item.summary, encrypted_content: item.encrypted_content });
        // The signature holds every reasoning item so far: the consumer keeps the latest one.
        return [{ type: "reasoningSignature", signature: encodeReasoning(this.reasoning) }];
      }
      case "response.completed":
      case "response.incomplete":
        this.final = event.response;
        return [];
      default:
        return [];
    }
  }

  /**
   * A finished function_call item carries the whole arguments: they are the truth, whatever the
   * deltas said (some servers send none). A call that was never announced starts here.
   */
  private finishedCall(outputIndex: number, item: OpenAI.Responses.ResponseFunctionToolCall): ModelStreamEvent[] {
    let call = this.calls.get(outputIndex);
    const events: ModelStreamEvent[] = [];
    if (!call) {
      call = { ordinal: this.calls.size };
      this.calls.set(outputIndex, call);
      events.push({ type: "toolCallStart", index: call.ordinal, id: item.call_id, name: item.name });
    }
    if (item.arguments) events.push({ type: "toolCallArguments", index: call.ordinal, argumentsText: item.arguments });
    return events;
  }

  /** The closing events: usage (when reported), then stop. */
  finish(): ModelStreamEvent[] {
    const response = this.final;
    const events: ModelStreamEvent[] = [];
    if (response?.usage) events.push({ type: "usage", usage: mapUsage(response.usage) });
    events.push({ type: "stop", reason: mapStop(response, this.calls.size > 0) });
    return events;
  }
}

/**
 * Facts of an in-stream failure. Its rate-limit message says when to retry ("Please try again
 * in 1.5s") since no header can; the error code names the cause (context_length_exceeded, ...).
 */
function describeStreamError(message: string | undefined, code: string | undefined): Failure {
  const wait = /try again in (\d+(?:\.\d+)?)\s*(ms|s)\b/i.exec(message ?? "");
  const retryAfterMs = wait ? Number.parseFloat(wait[1]!) * (wait[2]!.toLowerCase() === "ms" ? 1 : 1000) : undefined;
  return {
    ...(message ? { apiMessage: message } : {}),
    ...(code ? { apiCode: code } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

function mapUsage(usage: OpenAI.Responses.ResponseUsage): UsageReport {
  const cached = usage.input_tokens_details?.cached_tokens;
  const reasoning = usage.output_tokens_details?.reasoning_tokens;
  return {
    // input_tokens counts cached tokens too, as UsageReport wants.
    inputTokens: usage.input_tokens ?? 0,
    outputTokens: usage.output_tokens ?? 0,
    ...(cached ? { cachedInputTokens: cached } : {}),
    ...(reasoning ? { reasoningTokens: reasoning } : {}),
  };
}

function mapStop(response: ApiResponse | undefined, calledTools: boolean): StopReason {
  if (response?.status === "incomplete") {
    return response.incomplete_details?.reason === "max_output_tokens" ? "maxTokens" : "other";
  }
  return calledTools ? "toolCalls" : "end";
}
