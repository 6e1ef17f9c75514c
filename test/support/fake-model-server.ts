// A scripted stand-in for the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages
// APIs, speaking their streaming wire formats over real HTTP, so providers are tested through
// the real SDKs. It also answers Ollama's model list (GET /api/tags).
//
//   const fake = await FakeModelServer.start();
//   fake.enqueue({ kind: "response", text: ["Hel", "lo"] }, { kind: "error", status: 429 });
//   new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "test" });      // /v1/chat/completions
//   new OpenAIResponsesProvider({ baseURL: fake.openaiBaseURL, apiKey: "test" }); // /v1/responses
//   new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "test" });    // /v1/messages
//
// One script renders equivalently on all endpoints: same deltas in the same order (reasoning,
// then text, then tool calls), same stop reason, same usage totals.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";

export type ScriptStep =
  | {
      kind: "response";
      /** An array is one delta per element; a plain string is split into a few deltas. */
      text?: string | string[];
      /** OpenAI: delta.reasoning_content; Anthropic: a signed thinking block. */
      reasoning?: string | string[];
      /** `arguments` objects are JSON-stringified; the text is streamed in `chunks` pieces (default 3). */
      toolCalls?: Array<{
        id?: string;
        name: string;
        arguments: unknown | string;
        chunks?: number;
        /**
         * Send the arguments only whole, as several compatible servers and proxies do: no argument
         * deltas; Responses puts them in response.output_item.done only, Anthropic in the
         * tool_use block of content_block_start.
         */
        wholeArguments?: boolean;
      }>;
      /** `input` counts all prompt tokens, cached ones included. Default: estimated from sizes. */
      usage?: { input: number; output: number; cacheRead?: number; reasoning?: number };
      /** Default: "toolCalls" when there are tool calls, else "end". */
      stopReason?: "end" | "toolCalls" | "maxTokens";
      /** Pause before each content delta. */
      chunkDelayMs?: number;
      /**
       * Events written in one event-loop turn reach the socket as one write. A model on another
       * machine costs the benchmark nothing per event; here, a write each cost a system call per
       * delta, on the cores the servers measured share.
       */
      oneWrite?: boolean;
      /** Destroy the socket once this many content deltas (text/reasoning/argument pieces) were sent. */
      cutAfterChunks?: number;
      /** Send all content, then keep the stream open unfinished until the client goes away. */
      holdOpen?: boolean;
      /**
       * After the content, fail inside the 200 stream the way each API does: a chunk with an
       * "error" member (Chat Completions), `event: error` (Anthropic; type default
       * overloaded_error), `response.failed` (Responses; code default server_error).
       */
      streamError?: { message?: string; type?: string; code?: string };
    }
  | { kind: "error"; status: number; message?: string; retryAfterSeconds?: number; errorType?: string; errorCode?: string };

export interface RecordedRequest {
  method: string;
  path: string;
  /** The parsed JSON body (undefined when empty, the raw text when not JSON); `any` so tests can read wire fields. */
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

type ResponseStep = Extract<ScriptStep, { kind: "response" }>;
type ErrorStep = Extract<ScriptStep, { kind: "error" }>;
type Wire = "openai" | "responses" | "anthropic";
type Json = Record<string, unknown>;

/** A response step resolved into exactly what gets sent, shared by both wire formats. */
interface Plan {
  model: string;
  reasoning: string[];
  text: string[];
  toolCalls: Array<{ id: string; name: string; args: string[]; whole: boolean }>;
  usage: { input: number; output: number; cacheRead: number; reasoning: number };
  stop: "end" | "toolCalls" | "maxTokens";
  signature: string;
  delayMs: number;
  oneWrite: boolean;
  cutAfter?: number;
  holdOpen: boolean;
  streamError?: { message?: string; type?: string; code?: string };
}

export class FakeModelServer {
  readonly url: string;
  readonly openaiBaseURL: string;
  readonly anthropicBaseURL: string;
  readonly requests: RecordedRequest[] = [];
  /** What GET /api/tags lists, as Ollama names models. */
  ollamaModels: string[] = ["llama3.2:latest"];
  /** busyMs: time spent building and writing bytes (not waiting), for benchmarks. */
  stats = { deltasSent: 0, busyMs: 0 };
  private readonly queue: ScriptStep[] = [];
  private readonly waiters = new Set<{ count: number; resolve: () => void }>();

  private constructor(private readonly server: http.Server) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    this.openaiBaseURL = `${this.url}/v1`;
    this.anthropicBaseURL = this.url;
  }

  static async start(): Promise<FakeModelServer> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const fake = new FakeModelServer(server);
    server.on("request", (req, res) => {
      fake.handle(req, res).catch(() => res.destroy());
    });
    return fake;
  }

  /** Steps are consumed in order by POST requests to either API; an empty queue answers "ok". */
  enqueue(...steps: ScriptStep[]): void {
    this.queue.push(...steps);
  }

  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add({ count, resolve }));
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections(); // also ends held-open streams
    await closed;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const method = req.method ?? "GET";
    const body: unknown = parseBody(raw);
    this.requests.push({ method, path, body, headers: { ...req.headers } });
    for (const waiter of this.waiters) {
      if (this.requests.length >= waiter.count) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }

    const wireByHeader: Wire = req.headers["anthropic-version"] || req.headers["x-api-key"] ? "anthropic" : "openai";
    if (method === "GET" && path === "/v1/models") return this.sendJson(res, 200, modelList(wireByHeader), wireByHeader);
    if (method === "GET" && path === "/api/tags") return this.sendOllamaTags(res);
    const routes: Record<string, Wire> = { "/v1/chat/completions": "openai", "/v1/responses": "responses", "/v1/messages": "anthropic" };
    const wire = method === "POST" ? routes[path] : undefined;
    if (!wire) return this.sendError(res, wireByHeader, { kind: "error", status: 404, message: `No route for ${method} ${path}.` });

    const step = this.queue.shift() ?? { kind: "response", text: "ok" };
    if (step.kind === "error") return this.sendError(res, wire, step);
    const request = (body && typeof body === "object" ? body : {}) as Json;
    const plan = makePlan(step, request, wire);
    if (request["stream"] !== true) return this.sendWhole(res, wire, plan, request);
    const writer = new SseWriter(res, plan, this.stats);
    if (wire === "openai") await streamOpenAI(writer, plan, isIncludeUsage(request));
    else if (wire === "responses") await streamResponses(writer, plan, request);
    else await streamAnthropic(writer, plan);
  }

  /** Ollama's GET /api/tags, as `ollama serve` answers it. */
  private sendOllamaTags(res: http.ServerResponse): void {
    const models = this.ollamaModels.map((name, i) => ({
      name,
      model: name,
      modified_at: new Date(Date.UTC(2025, 4, 4, 17, 37, 44) - i * 86_400_000).toISOString().replace("Z", "-07:00"),
      size: 2_019_393_189 + i,
      digest: randomBytes(32).toString("hex"),
      details: {
        parent_model: "",
        format: "gguf",
        family: "llama",
        families: ["llama"],
        parameter_size: "3.2B",
        quantization_level: "Q4_K_M",
      },
    }));
    const text = JSON.stringify({ models });
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)) });
    res.end(text);
  }

  private sendJson(res: http.ServerResponse, status: number, payload: unknown, wire: Wire, headers: Record<string, string> = {}): void {
    const started = performance.now();
    const text = JSON.stringify(payload);
    const requestId = (payload as { request_id?: unknown }).request_id;
    const idHeader =
      wire !== "anthropic"
        ? { "x-request-id": `req_${randomId(32, "hex")}` }
        : { "request-id": typeof requestId === "string" ? requestId : `req_${randomId(24)}` };
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text)),
      ...idHeader,
      ...headers,
    });
    res.end(text);
    this.stats.busyMs += performance.now() - started;
  }

  private sendError(res: http.ServerResponse, wire: Wire, step: ErrorStep): void {
    const { status } = step;
    const headers: Record<string, string> = {};
    if (step.retryAfterSeconds !== undefined) {
      // Both SDKs prefer retry-after-ms, which keeps sub-second waits exact (good for tests);
      // retry-after itself stays a valid whole number of seconds.
      headers["retry-after"] = String(Math.ceil(step.retryAfterSeconds));
      headers["retry-after-ms"] = String(Math.round(step.retryAfterSeconds * 1000));
    }
    if (wire !== "anthropic") {
      const known = OPENAI_ERRORS[status] ?? OPENAI_ERRORS[status >= 500 ? 500 : 400]!;
      const error = {
        message: step.message ?? known.message,
        type: step.errorType ?? known.type,
        param: null,
        code: step.errorCode ?? known.code,
      };
      this.sendJson(res, status, { error }, wire, headers);
    } else {
      const known = ANTHROPIC_ERRORS[status] ?? ANTHROPIC_ERRORS[status >= 500 ? 500 : 400]!;
      const error = { type: step.errorType ?? known.type, message: step.message ?? known.message };
      this.sendJson(res, status, { type: "error", error, request_id: `req_${randomId(24)}` }, wire, headers);
    }
  }

  /** Non-streaming answers (stream absent or false), for callers that want a whole message. */
  private async sendWhole(res: http.ServerResponse, wire: Wire, plan: Plan, request: Json): Promise<void> {
    if (plan.cutAfter !== undefined) return void res.destroy();
    if (plan.holdOpen) return new Promise((resolve) => res.once("close", resolve));
    const reasoning = plan.reasoning.join("");
    const text = plan.text.join("");
    if (wire === "responses") {
      const { items, response } = responsesParts(plan, request);
      const status = plan.stop === "maxTokens" ? "incomplete" : "completed";
      this.sendJson(
        res,
        200,
        response(
          status,
          items.map((item) => item.done),
          responsesUsage(plan),
        ),
        wire,
      );
    } else if (wire === "openai") {
      const message: Json = { role: "assistant", content: text || null, refusal: null, annotations: [] };
      if (reasoning) message["reasoning_content"] = reasoning;
      if (plan.toolCalls.length > 0) {
        message["tool_calls"] = plan.toolCalls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.args.join("") },
        }));
      }
      this.sendJson(
        res,
        200,
        {
          id: `chatcmpl-${randomId(29)}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: plan.model,
          choices: [{ index: 0, message, logprobs: null, finish_reason: OPENAI_STOP[plan.stop] }],
          usage: openAIUsage(plan),
          service_tier: "default",
          system_fingerprint: FINGERPRINT,
        },
        wire,
      );
    } else {
      const content: Json[] = [];
      if (reasoning) content.push({ type: "thinking", thinking: reasoning, signature: plan.signature });
      if (text) content.push({ type: "text", text });
      for (const call of plan.toolCalls)
        content.push({ type: "tool_use", id: call.id, name: call.name, input: JSON.parse(call.args.join("") || "{}") });
      this.sendJson(
        res,
        200,
        {
          id: `msg_01${randomId(22)}`,
          type: "message",
          role: "assistant",
          model: plan.model,
          content,
          stop_reason: ANTHROPIC_STOP[plan.stop],
          stop_sequence: null,
          usage: { ...anthropicStartUsage(plan), output_tokens: plan.usage.output },
        },
        wire,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Streaming, OpenAI style: `data: {chat.completion.chunk}\n\n` ... `data: [DONE]\n\n`

async function streamOpenAI(w: SseWriter, plan: Plan, includeUsage: boolean): Promise<void> {
  const base = {
    id: `chatcmpl-${randomId(29)}`,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: plan.model,
    service_tier: "default",
    system_fingerprint: FINGERPRINT,
  };
  // With include_usage every chunk carries "usage": null except the last, usage-only one.
  const chunk = (delta: Json | typeof HOLE, finishReason: string | null = null): Json => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });
  // The content deltas' chunks, one per token of a long stream: the same text as chunk()'s,
  // made from a template (a benchmark's fake model should take from its cores as little as a
  // remote one does).
  const [before, after] = JSON.stringify(chunk(HOLE)).split(JSON.stringify(HOLE)) as [string, string];
  const deltaChunk = (delta: Json): JsonText => new JsonText(before + JSON.stringify(delta) + after);
  w.start();
  w.event(undefined, chunk({ role: "assistant", content: "", refusal: null }));
  for (const piece of plan.reasoning) if (!(await w.delta(undefined, deltaChunk({ reasoning_content: piece })))) return;
  for (const piece of plan.text) if (!(await w.delta(undefined, deltaChunk({ content: piece })))) return;
  for (const [index, call] of plan.toolCalls.entries()) {
    w.event(undefined, chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
    for (const piece of call.args) {
      if (!(await w.delta(undefined, chunk({ tool_calls: [{ index, function: { arguments: piece } }] })))) return;
    }
  }
  if (!(await w.beforeFinish())) return;
  if (plan.streamError) {
    const { message = "The server had an error processing your request.", type = "server_error", code = null } = plan.streamError;
    w.event(undefined, { error: { message, type, param: null, code } });
    return w.end();
  }
  w.event(undefined, chunk({}, OPENAI_STOP[plan.stop]));
  if (includeUsage) w.event(undefined, { ...base, choices: [], usage: openAIUsage(plan) });
  w.raw("data: [DONE]\n\n");
  w.end();
}

function openAIUsage(plan: Plan): Json {
  const { input, output, cacheRead, reasoning } = plan.usage;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: cacheRead, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Streaming, Anthropic style: `event: <type>\ndata: <json>\n\n`, one content block per kind.

async function streamAnthropic(w: SseWriter, plan: Plan): Promise<void> {
  w.start();
  w.event("message_start", {
    type: "message_start",
    message: {
      id: `msg_01${randomId(22)}`,
      type: "message",
      role: "assistant",
      model: plan.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...anthropicStartUsage(plan), output_tokens: 1 },
    },
  });
  let index = 0;
  let pinged = false;
  const startBlock = (block: Json): void => {
    w.event("content_block_start", { type: "content_block_start", index, content_block: block });
    if (!pinged) w.event("ping", { type: "ping" }); // the real API pings once after the first block starts
    pinged = true;
  };
  const stopBlock = (): void => {
    w.event("content_block_stop", { type: "content_block_stop", index });
    index++;
  };
  const delta = (payload: Json): Promise<boolean> => w.delta("content_block_delta", { type: "content_block_delta", index, delta: payload });

  // The final block stays open while a held stream waits, so its stop is deferred.
  let openBlock = false;
  const closeOpen = (): void => {
    if (openBlock) stopBlock();
    openBlock = false;
  };
  if (plan.reasoning.length > 0) {
    startBlock({ type: "thinking", thinking: "", signature: "" });
    openBlock = true;
    for (const piece of plan.reasoning) if (!(await delta({ type: "thinking_delta", thinking: piece }))) return;
    w.event("content_block_delta", { type: "content_block_delta", index, delta: { type: "signature_delta", signature: plan.signature } });
  }
  if (plan.text.length > 0) {
    closeOpen();
    startBlock({ type: "text", text: "" });
    openBlock = true;
    for (const piece of plan.text) if (!(await delta({ type: "text_delta", text: piece }))) return;
  }
  for (const call of plan.toolCalls) {
    closeOpen();
    startBlock({ type: "tool_use", id: call.id, name: call.name, input: call.whole ? JSON.parse(call.args.join("")) : {} });
    openBlock = true;
    if (call.whole) continue;
    w.event("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: "" } });
    for (const piece of call.args) if (!(await delta({ type: "input_json_delta", partial_json: piece }))) return;
  }
  if (!pinged) w.event("ping", { type: "ping" });
  if (!(await w.beforeFinish())) return;
  if (plan.streamError) {
    const { message = "Overloaded", type = "overloaded_error" } = plan.streamError;
    w.event("error", { type: "error", error: { type, message } });
    return w.end();
  }
  closeOpen();
  const usage: Json = { output_tokens: plan.usage.output };
  if (plan.usage.reasoning) usage["output_tokens_details"] = { thinking_tokens: plan.usage.reasoning };
  w.event("message_delta", { type: "message_delta", delta: { stop_reason: ANTHROPIC_STOP[plan.stop], stop_sequence: null }, usage });
  w.event("message_stop", { type: "message_stop" });
  w.end();
}

// ---------------------------------------------------------------------------------------------
// Streaming, Responses style: `event: <type>\ndata: {"type":<type>,"sequence_number":N,...}\n\n`,
// one output item per kind (reasoning, message, each function call), no [DONE] at the end.

/** An output item as announced (`added`) and as finished (`done`), with its id. */
interface OutputItem {
  id: string;
  added: Json;
  done: Json;
  /** The plan's tool call, for function_call items. */
  call?: Plan["toolCalls"][number];
}

/** The output items a plan produces, and the response object around them. */
function responsesParts(plan: Plan, request: Json) {
  const items: OutputItem[] = [];
  const include = Array.isArray(request["include"]) ? request["include"] : [];
  const encrypted = include.includes("reasoning.encrypted_content");
  // Reasoning models always output a reasoning item, even when its summary is empty.
  if (plan.reasoning.length > 0 || encrypted) {
    const id = `rs_${randomId(48, "hex")}`;
    const text = plan.reasoning.join("");
    const summary = text ? [{ type: "summary_text", text }] : [];
    items.push({
      id,
      added: { id, type: "reasoning", summary: [] },
      done: { id, type: "reasoning", summary, ...(encrypted ? { encrypted_content: `gAAAAAB${randomBytes(96).toString("base64")}` } : {}) },
    });
  }
  if (plan.text.length > 0) {
    const id = `msg_${randomId(48, "hex")}`;
    const part = { type: "output_text", annotations: [], logprobs: [], text: plan.text.join("") };
    items.push({
      id,
      added: { id, type: "message", status: "in_progress", content: [], role: "assistant" },
      done: { id, type: "message", status: "completed", content: [part], role: "assistant" },
    });
  }
  for (const call of plan.toolCalls) {
    const id = `fc_${randomId(48, "hex")}`;
    const base = { id, type: "function_call", call_id: call.id, name: call.name };
    items.push({
      id,
      call,
      added: { ...base, status: "in_progress", arguments: "" },
      done: { ...base, status: "completed", arguments: call.args.join("") },
    });
  }
  const id = `resp_${randomId(48, "hex")}`;
  const createdAt = Math.floor(Date.now() / 1000);
  const reasoning = (request["reasoning"] ?? {}) as Json;
  const response = (status: string, output: Json[], usage: Json | null, extra: Json = {}): Json => ({
    id,
    object: "response",
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: request["instructions"] ?? null,
    max_output_tokens: request["max_output_tokens"] ?? null,
    max_tool_calls: null,
    model: plan.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: reasoning["effort"] ?? null, summary: reasoning["summary"] ?? null },
    safety_identifier: null,
    service_tier: "default",
    store: request["store"] ?? true,
    temperature: 1.0,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto",
    tools: request["tools"] ?? [],
    top_logprobs: 0,
    top_p: 1.0,
    truncation: "disabled",
    usage,
    user: null,
    metadata: {},
    ...(status === "incomplete" ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
    ...extra,
  });
  return { items, response };
}

function responsesUsage(plan: Plan): Json {
  const { input, output, cacheRead, reasoning } = plan.usage;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cacheRead },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + output,
  };
}

async function streamResponses(w: SseWriter, plan: Plan, request: Json): Promise<void> {
  const { items, response } = responsesParts(plan, request);
  let sequence = 0;
  // Every event names its type twice (SSE event and "type") and carries the next sequence number.
  const data = (type: string, payload: Json): Json => ({ type, sequence_number: sequence++, ...payload });
  const send = (type: string, payload: Json): void => w.event(type, data(type, payload));
  const delta = (type: string, payload: Json): Promise<boolean> =>
    w.delta(type, data(type, { ...payload, obfuscation: randomId(4 + (sequence % 8)) }));

  w.start();
  send("response.created", { response: response("in_progress", [], null) });
  send("response.in_progress", { response: response("in_progress", [], null) });
  // The last item's closing events wait while a held stream is open (like Anthropic's last block).
  let closeOpen = (): void => undefined;
  for (const [outputIndex, item] of items.entries()) {
    closeOpen();
    const at = { item_id: item.id, output_index: outputIndex };
    send("response.output_item.added", { output_index: outputIndex, item: item.added });
    const closeItem = (): void => send("response.output_item.done", { output_index: outputIndex, item: item.done });
    if (item.added["type"] === "reasoning") {
      if (plan.reasoning.length > 0) {
        const part = { type: "summary_text", text: "" };
        send("response.reasoning_summary_part.added", { ...at, summary_index: 0, part });
        for (const piece of plan.reasoning) {
          if (!(await delta("response.reasoning_summary_text.delta", { ...at, summary_index: 0, delta: piece }))) return;
        }
        const text = plan.reasoning.join("");
        closeOpen = () => {
          send("response.reasoning_summary_text.done", { ...at, summary_index: 0, text });
          send("response.reasoning_summary_part.done", { ...at, summary_index: 0, part: { ...part, text } });
          closeItem();
        };
      } else {
        closeOpen = closeItem;
      }
    } else if (item.added["type"] === "message") {
      const at0 = { ...at, content_index: 0 };
      send("response.content_part.added", { ...at0, part: { type: "output_text", annotations: [], logprobs: [], text: "" } });
      for (const piece of plan.text) {
        if (!(await delta("response.output_text.delta", { ...at0, delta: piece, logprobs: [] }))) return;
      }
      const part = (item.done["content"] as Json[])[0]!;
      closeOpen = () => {
        send("response.output_text.done", { ...at0, text: part["text"], logprobs: [] });
        send("response.content_part.done", { ...at0, part });
        closeItem();
      };
    } else if (item.call) {
      const call = item.call;
      if (call.whole) {
        closeOpen = closeItem;
        continue;
      }
      for (const piece of call.args) {
        if (!(await delta("response.function_call_arguments.delta", { ...at, delta: piece }))) return;
      }
      closeOpen = () => {
        send("response.function_call_arguments.done", { ...at, name: call.name, arguments: call.args.join("") });
        closeItem();
      };
    }
  }
  if (!(await w.beforeFinish())) return;
  closeOpen();
  const output = items.map((item) => item.done);
  if (plan.streamError) {
    const { message = "An error occurred while processing your request.", code = "server_error" } = plan.streamError;
    send("response.failed", { response: response("failed", output, null, { error: { code, message } }) });
  } else if (plan.stop === "maxTokens") {
    send("response.incomplete", { response: response("incomplete", output, responsesUsage(plan)) });
  } else {
    send("response.completed", {
      response: response("completed", output, responsesUsage(plan), { completed_at: Math.floor(Date.now() / 1000) }),
    });
  }
  w.end();
}

/** Anthropic's input_tokens excludes cache reads; the script's `input` includes them. */
function anthropicStartUsage(plan: Plan): Json {
  return {
    input_tokens: Math.max(0, plan.usage.input - plan.usage.cacheRead),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: plan.usage.cacheRead,
    service_tier: "standard",
  };
}

// ---------------------------------------------------------------------------------------------

/** Writes SSE events, applying the script's pacing, cut and hold, and keeping the stats. */
/** A JSON text already made, sent as it is. */
class JsonText {
  constructor(readonly text: string) {}
}

/** Stands for a value in a JSON template: a string no script sends. */
const HOLE = "\u0000hole\u0000";

class SseWriter {
  private sent = 0;
  private closed = false;
  private corked = false;
  /** When the next content delta is due, once pacing has begun. */
  private due: number | undefined;
  /** Settles when the last write reached the socket; only tracked when a cut is scripted. */
  private flushed: Promise<void> = Promise.resolve();

  constructor(
    private readonly res: http.ServerResponse,
    private readonly plan: Plan,
    private readonly stats: FakeModelServer["stats"],
  ) {
    res.once("close", () => (this.closed = true));
  }

  start(): void {
    this.timed(() => {
      this.res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      this.res.flushHeaders(); // the SDKs resolve create() on headers; don't make them wait
    });
  }

  event(name: string | undefined, data: unknown): void {
    const json = data instanceof JsonText ? data.text : JSON.stringify(data);
    this.raw(`${name ? `event: ${name}\n` : ""}data: ${json}\n\n`);
  }

  raw(text: string): void {
    if (this.closed) return;
    this.timed(() => {
      if (this.plan.oneWrite && !this.corked) {
        this.corked = true;
        this.res.cork();
        setImmediate(() => {
          this.corked = false;
          this.res.uncork();
        });
      }
      if (this.plan.cutAfter === undefined) this.res.write(text);
      else this.flushed = new Promise((resolve) => this.res.write(text, () => resolve()));
    });
  }

  /** Sends one content delta; false when the stream is over (cut, or the client left). */
  async delta(name: string | undefined, data: unknown): Promise<boolean> {
    if (!(await this.gate())) return false;
    if (this.plan.delayMs > 0) await this.pace();
    if (this.closed) return false;
    this.event(name, data);
    this.sent++;
    this.stats.deltasSent++;
    return true;
  }

  /**
   * Waits until the next delta is due: deltas `delayMs` apart by the clock, as a model streams at
   * its own pace whatever this machine is doing. A timer that fires late (the cores are busy) does
   * not push every later delta back; the overdue ones go out at once, as a remote model's would
   * arrive together after a stall.
   */
  private async pace(): Promise<void> {
    this.due = (this.due ?? performance.now()) + this.plan.delayMs;
    const wait = this.due - performance.now();
    if (wait > 0) await sleep(wait);
  }

  /** Called after all content: applies a pending cut or hold. False when nothing more may be sent. */
  async beforeFinish(): Promise<boolean> {
    if (!(await this.gate())) return false;
    if (this.plan.holdOpen && !this.closed) await new Promise((resolve) => this.res.once("close", resolve));
    return !this.closed;
  }

  end(): void {
    if (!this.closed) this.timed(() => this.res.end());
  }

  /** Cuts the connection once the scripted number of deltas went out (after they reached the socket). */
  private async gate(): Promise<boolean> {
    if (this.closed) return false;
    if (this.plan.cutAfter === undefined || this.sent < this.plan.cutAfter) return true;
    await this.flushed;
    this.res.socket?.destroy();
    this.closed = true;
    return false;
  }

  private timed(work: () => void): void {
    const started = performance.now();
    work();
    this.stats.busyMs += performance.now() - started;
  }
}

function makePlan(step: ResponseStep, request: Json, wire: Wire): Plan {
  const reasoning = pieces(step.reasoning);
  const text = pieces(step.text);
  const toolCalls = (step.toolCalls ?? []).map((call) => {
    const json = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
    return {
      id: call.id ?? (wire === "anthropic" ? `toolu_01${randomId(22)}` : `call_${randomId(24)}`),
      name: call.name,
      args: split(json, call.chunks ?? 3),
      whole: call.wholeArguments === true,
    };
  });
  const outputChars = [...reasoning, ...text, ...toolCalls.flatMap((call) => call.args)].join("").length;
  const prompt = [request["messages"] ?? request["input"], request["system"] ?? request["instructions"]];
  const inputChars = prompt.reduce<number>((sum, part) => sum + JSON.stringify(part ?? "").length, 0);
  const usage = {
    input: step.usage?.input ?? Math.max(1, Math.ceil(inputChars / 4)),
    output: step.usage?.output ?? Math.max(1, Math.ceil(outputChars / 4)),
    cacheRead: step.usage?.cacheRead ?? 0,
    reasoning: step.usage?.reasoning ?? 0,
  };
  return {
    model: typeof request["model"] === "string" ? request["model"] : "fake-model",
    reasoning,
    text,
    toolCalls,
    usage,
    stop: step.stopReason ?? (toolCalls.length > 0 ? "toolCalls" : "end"),
    signature: `Eq${randomBytes(48).toString("base64")}`,
    delayMs: step.chunkDelayMs ?? 0,
    oneWrite: step.oneWrite ?? false,
    ...(step.cutAfterChunks !== undefined ? { cutAfter: step.cutAfterChunks } : {}),
    holdOpen: step.holdOpen ?? false,
    ...(step.streamError ? { streamError: step.streamError } : {}),
  };
}

/** An array is taken as-is (one delta each); a string is split into up to 3 deltas. */
function pieces(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : split(value, 3);
}

/** Splits text into `count` nearly equal pieces without breaking surrogate pairs. */
function split(text: string, count: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.ceil(chars.length / Math.max(1, Math.min(count, chars.length)));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

function isIncludeUsage(request: Json): boolean {
  const options = request["stream_options"];
  return !!options && typeof options === "object" && (options as Json)["include_usage"] === true;
}

function modelList(wire: Wire): Json {
  if (wire === "openai") {
    return {
      object: "list",
      data: [
        { id: "gpt-4.1", object: "model", created: 1744316542, owned_by: "system" },
        { id: "gpt-4.1-mini", object: "model", created: 1744318173, owned_by: "system" },
      ],
    };
  }
  const data = [
    { type: "model", id: "claude-sonnet-4-6", display_name: "Claude Sonnet 4.6", created_at: "2026-02-17T00:00:00Z" },
    { type: "model", id: "claude-sonnet-4-5-20250929", display_name: "Claude Sonnet 4.5", created_at: "2025-09-29T00:00:00Z" },
    { type: "model", id: "claude-haiku-4-5-20251001", display_name: "Claude Haiku 4.5", created_at: "2025-10-15T00:00:00Z" },
  ];
  return { data, has_more: false, first_id: data[0]!.id, last_id: data[data.length - 1]!.id };
}

const FINGERPRINT = "fp_f2a5c8d1e0";
const OPENAI_STOP = { end: "stop", toolCalls: "tool_calls", maxTokens: "length" } as const;
const ANTHROPIC_STOP = { end: "end_turn", toolCalls: "tool_use", maxTokens: "max_tokens" } as const;

const OPENAI_ERRORS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: "Invalid request.", type: "invalid_request_error", code: null },
  401: {
    message: "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys.",
    type: "invalid_request_error",
    code: "invalid_api_key",
  },
  403: { message: "You are not allowed to sample from this model.", type: "invalid_request_error", code: null },
  404: { message: "The model does not exist or you do not have access to it.", type: "invalid_request_error", code: "model_not_found" },
  429: { message: "Rate limit reached for requests. Please try again shortly.", type: "requests", code: "rate_limit_exceeded" },
  500: { message: "The server had an error while processing your request. Sorry about that!", type: "server_error", code: null },
  503: { message: "The server is overloaded or not ready yet.", type: "server_error", code: null },
};

const ANTHROPIC_ERRORS: Record<number, { message: string; type: string }> = {
  400: { message: "Invalid request.", type: "invalid_request_error" },
  401: { message: "invalid x-api-key", type: "authentication_error" },
  403: { message: "Your API key does not have permission to use the specified resource.", type: "permission_error" },
  404: { message: "Not found.", type: "not_found_error" },
  413: { message: "Request exceeds the maximum allowed number of bytes.", type: "request_too_large" },
  429: { message: "Number of request tokens has exceeded your per-minute rate limit.", type: "rate_limit_error" },
  500: { message: "Internal server error", type: "api_error" },
  529: { message: "Overloaded", type: "overloaded_error" },
};

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function parseBody(raw: string): unknown {
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function randomId(length: number, alphabet: "alnum" | "hex" = "alnum"): string {
  const chars = alphabet === "hex" ? "0123456789abcdef" : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(randomBytes(length), (byte) => chars[byte % chars.length]).join("");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
