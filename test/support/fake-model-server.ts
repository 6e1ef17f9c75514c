// A scripted stand-in for the OpenAI Chat Completions and Anthropic Messages APIs, speaking
// their streaming wire formats over real HTTP, so providers are tested through the real SDKs.
//
//   const fake = await FakeModelServer.start();
//   fake.enqueue({ kind: "response", text: ["Hel", "lo"] }, { kind: "error", status: 429 });
//   new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "test" });
//   new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "test" });
//
// One script renders equivalently on both endpoints: same deltas in the same order (reasoning,
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
      toolCalls?: Array<{ id?: string; name: string; arguments: unknown | string; chunks?: number }>;
      /** `input` counts all prompt tokens, cached ones included. Default: estimated from sizes. */
      usage?: { input: number; output: number; cacheRead?: number; reasoning?: number };
      /** Default: "toolCalls" when there are tool calls, else "end". */
      stopReason?: "end" | "toolCalls" | "maxTokens";
      /** Pause before each content delta. */
      chunkDelayMs?: number;
      /** Destroy the socket once this many content deltas (text/reasoning/argument pieces) were sent. */
      cutAfterChunks?: number;
      /** Send all content, then keep the stream open unfinished until the client goes away. */
      holdOpen?: boolean;
    }
  | { kind: "error"; status: number; message?: string; retryAfterSeconds?: number; errorType?: string };

export interface RecordedRequest {
  method: string;
  path: string;
  /** The parsed JSON body (undefined when empty, the raw text when not JSON); `any` so tests can read wire fields. */
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

type ResponseStep = Extract<ScriptStep, { kind: "response" }>;
type ErrorStep = Extract<ScriptStep, { kind: "error" }>;
type Wire = "openai" | "anthropic";
type Json = Record<string, unknown>;

/** A response step resolved into exactly what gets sent, shared by both wire formats. */
interface Plan {
  model: string;
  reasoning: string[];
  text: string[];
  toolCalls: Array<{ id: string; name: string; args: string[] }>;
  usage: { input: number; output: number; cacheRead: number; reasoning: number };
  stop: "end" | "toolCalls" | "maxTokens";
  signature: string;
  delayMs: number;
  cutAfter?: number;
  holdOpen: boolean;
}

export class FakeModelServer {
  readonly url: string;
  readonly openaiBaseURL: string;
  readonly anthropicBaseURL: string;
  readonly requests: RecordedRequest[] = [];
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
    const wire: Wire | undefined =
      method === "POST" && path === "/v1/chat/completions" ? "openai" : method === "POST" && path === "/v1/messages" ? "anthropic" : undefined;
    if (!wire) return this.sendError(res, wireByHeader, { kind: "error", status: 404, message: `No route for ${method} ${path}.` });

    const step = this.queue.shift() ?? { kind: "response", text: "ok" };
    if (step.kind === "error") return this.sendError(res, wire, step);
    const request = (body && typeof body === "object" ? body : {}) as Json;
    const plan = makePlan(step, request, wire);
    if (request["stream"] !== true) return this.sendWhole(res, wire, plan);
    const writer = new SseWriter(res, plan, this.stats);
    if (wire === "openai") await streamOpenAI(writer, plan, isIncludeUsage(request));
    else await streamAnthropic(writer, plan);
  }

  private sendJson(res: http.ServerResponse, status: number, payload: unknown, wire: Wire, headers: Record<string, string> = {}): void {
    const started = performance.now();
    const text = JSON.stringify(payload);
    const requestId = (payload as { request_id?: unknown }).request_id;
    const idHeader =
      wire === "openai"
        ? { "x-request-id": `req_${randomId(32, "hex")}` }
        : { "request-id": typeof requestId === "string" ? requestId : `req_${randomId(24)}` };
    res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...idHeader, ...headers });
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
    if (wire === "openai") {
      const known = OPENAI_ERRORS[status] ?? OPENAI_ERRORS[status >= 500 ? 500 : 400]!;
      const error = { message: step.message ?? known.message, type: step.errorType ?? known.type, param: null, code: known.code };
      this.sendJson(res, status, { error }, wire, headers);
    } else {
      const known = ANTHROPIC_ERRORS[status] ?? ANTHROPIC_ERRORS[status >= 500 ? 500 : 400]!;
      const error = { type: step.errorType ?? known.type, message: step.message ?? known.message };
      this.sendJson(res, status, { type: "error", error, request_id: `req_${randomId(24)}` }, wire, headers);
    }
  }

  /** Non-streaming answers (stream absent or false), for callers that want a whole message. */
  private async sendWhole(res: http.ServerResponse, wire: Wire, plan: Plan): Promise<void> {
    if (plan.cutAfter !== undefined) return void res.destroy();
    if (plan.holdOpen) return new Promise((resolve) => res.once("close", resolve));
    const reasoning = plan.reasoning.join("");
    const text = plan.text.join("");
    if (wire === "openai") {
      const message: Json = { role: "assistant", content: text || null, refusal: null, annotations: [] };
      if (reasoning) message["reasoning_content"] = reasoning;
      if (plan.toolCalls.length > 0) {
        message["tool_calls"] = plan.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.args.join("") } }));
      }
      this.sendJson(res, 200, {
        id: `chatcmpl-${randomId(29)}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: plan.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: OPENAI_STOP[plan.stop] }],
        usage: openAIUsage(plan),
        service_tier: "default",
        system_fingerprint: FINGERPRINT,
      }, wire);
    } else {
      const content: Json[] = [];
      if (reasoning) content.push({ type: "thinking", thinking: reasoning, signature: plan.signature });
      if (text) content.push({ type: "text", text });
      for (const call of plan.toolCalls) content.push({ type: "tool_use", id: call.id, name: call.name, input: JSON.parse(call.args.join("") || "{}") });
      this.sendJson(res, 200, {
        id: `msg_01${randomId(22)}`,
        type: "message",
        role: "assistant",
        model: plan.model,
        content,
        stop_reason: ANTHROPIC_STOP[plan.stop],
        stop_sequence: null,
        usage: { ...anthropicStartUsage(plan), output_tokens: plan.usage.output },
      }, wire);
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
  const chunk = (delta: Json, finishReason: string | null = null): Json => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });
  w.start();
  w.event(undefined, chunk({ role: "assistant", content: "", refusal: null }));
  for (const piece of plan.reasoning) if (!(await w.delta(undefined, chunk({ reasoning_content: piece })))) return;
  for (const piece of plan.text) if (!(await w.delta(undefined, chunk({ content: piece })))) return;
  for (const [index, call] of plan.toolCalls.entries()) {
    w.event(undefined, chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
    for (const piece of call.args) {
      if (!(await w.delta(undefined, chunk({ tool_calls: [{ index, function: { arguments: piece } }] })))) return;
    }
  }
  if (!(await w.beforeFinish())) return;
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
    completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
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
    startBlock({ type: "tool_use", id: call.id, name: call.name, input: {} });
    openBlock = true;
    w.event("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: "" } });
    for (const piece of call.args) if (!(await delta({ type: "input_json_delta", partial_json: piece }))) return;
  }
  if (!pinged) w.event("ping", { type: "ping" });
  if (!(await w.beforeFinish())) return;
  closeOpen();
  const usage: Json = { output_tokens: plan.usage.output };
  if (plan.usage.reasoning) usage["output_tokens_details"] = { thinking_tokens: plan.usage.reasoning };
  w.event("message_delta", { type: "message_delta", delta: { stop_reason: ANTHROPIC_STOP[plan.stop], stop_sequence: null }, usage });
  w.event("message_stop", { type: "message_stop" });
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
class SseWriter {
  private sent = 0;
  private closed = false;
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
    this.raw(`${name ? `event: ${name}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }

  raw(text: string): void {
    if (this.closed) return;
    this.timed(() => {
      if (this.plan.cutAfter === undefined) this.res.write(text);
      else this.flushed = new Promise((resolve) => this.res.write(text, () => resolve()));
    });
  }

  /** Sends one content delta; false when the stream is over (cut, or the client left). */
  async delta(name: string | undefined, data: unknown): Promise<boolean> {
    if (!(await this.gate())) return false;
    if (this.plan.delayMs > 0) await sleep(this.plan.delayMs);
    if (this.closed) return false;
    this.event(name, data);
    this.sent++;
    this.stats.deltasSent++;
    return true;
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
      id: call.id ?? (wire === "openai" ? `call_${randomId(24)}` : `toolu_01${randomId(22)}`),
      name: call.name,
      args: split(json, call.chunks ?? 3),
    };
  });
  const outputChars = [...reasoning, ...text, ...toolCalls.flatMap((call) => call.args)].join("").length;
  const inputChars = JSON.stringify(request["messages"] ?? "").length + JSON.stringify(request["system"] ?? "").length;
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
    ...(step.cutAfterChunks !== undefined ? { cutAfter: step.cutAfterChunks } : {}),
    holdOpen: step.holdOpen ?? false,
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
