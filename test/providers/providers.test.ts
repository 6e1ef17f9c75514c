// The model providers (OpenAI Responses, OpenAI Chat Completions, Anthropic), run through their
// real SDKs over real HTTP against the fake model server, plus provider selection.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import OpenAI from "openai";
import { FakeModelServer } from "../support/fake-model-server.js";
import { OpenAIChatProvider } from "../../src/providers/openai-chat.js";
import { OpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
import { AnthropicProvider } from "../../src/providers/anthropic.js";
import { createProvider, isProviderConfigProblem, planProvider } from "../../src/providers/select.js";
import { abortableSleep, withRetries, type RetryPolicy } from "../../src/providers/retry.js";
import { OPENAI_REASONING_PREFIX, ProviderError } from "../../src/providers/provider.js";
import type { ConversationMessage, ModelProvider, ModelRequest, ModelStreamEvent } from "../../src/providers/provider.js";
import { fetchOrSayWhy } from "../support/fetch.js";

type ProviderName = "openai" | "openai-chat" | "anthropic";

function rawProvider(name: ProviderName, fake: FakeModelServer, maxRetries = 0): ModelProvider {
  switch (name) {
    case "openai":
      return new OpenAIResponsesProvider({ baseURL: fake.openaiBaseURL, apiKey: "test-key", maxRetries });
    case "openai-chat":
      return new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "test-key", maxRetries });
    case "anthropic":
      return new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "test-key", maxRetries });
  }
}

/** Without `retry` the bare provider (one request per call); with it, wrapped as createProvider does. */
function makeProvider(name: ProviderName, fake: FakeModelServer, retry?: RetryPolicy): ModelProvider {
  const provider = rawProvider(name, fake);
  return retry ? withRetries(provider, { baseDelayMs: 5, ...retry }) : provider;
}

function request(messages: ConversationMessage[] = [{ role: "user", content: "hi" }]): ModelRequest {
  return {
    model: "test-model",
    system: "You are a test.",
    messages,
    tools: [{ name: "read_file", description: "Reads a file.", parameters: { type: "object", properties: { path: { type: "string" } } } }],
  };
}

async function run(
  provider: ModelProvider,
  req: ModelRequest = request(),
  signal = new AbortController().signal,
): Promise<{ events: ModelStreamEvent[]; error?: unknown }> {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const event of provider.stream(req, signal)) events.push(event);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

const textOf = (events: ModelStreamEvent[], type: "textDelta" | "reasoningDelta"): string[] =>
  events.flatMap((e) => (e.type === type ? [e.delta] : []));

function assertProviderError(error: unknown, code: string): ProviderError {
  assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  return error;
}

/** The real APIs' words for a prompt that does not fit. */
const CONTEXT_OVERFLOW: Record<ProviderName, { message: string; errorCode?: string }> = {
  openai: {
    message: "Your input exceeds the context window of this model. Please adjust your input and try again.",
    errorCode: "context_length_exceeded",
  },
  "openai-chat": {
    message:
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
    errorCode: "context_length_exceeded",
  },
  anthropic: { message: "prompt is too long: 210000 tokens > 200000 maximum" },
};

for (const name of ["openai", "openai-chat", "anthropic"] as const) {
  describe(`${name} provider`, () => {
    let fake: FakeModelServer;
    beforeEach(async () => {
      fake = await FakeModelServer.start();
    });
    afterEach(() => fake.close());

    test("streams many text deltas in order, then usage and stop", async () => {
      const pieces = Array.from({ length: 40 }, (_, i) => `w${i} `);
      fake.enqueue({ kind: "response", text: pieces });
      const { events, error } = await run(makeProvider(name, fake));
      assert.equal(error, undefined);
      assert.deepEqual(textOf(events, "textDelta"), pieces);
      assert.deepEqual(
        events.slice(-2).map((e) => e.type),
        ["usage", "stop"],
      );
      assert.deepEqual(events.at(-1), { type: "stop", reason: "end" });

      const body = fake.requests[0]!.body;
      assert.equal(body.model, "test-model");
      assert.equal(body.stream, true);
      if (name === "openai") {
        assert.equal(fake.requests[0]!.path, "/v1/responses");
        assert.equal(body.instructions, "You are a test.");
        assert.deepEqual(body.input, [{ type: "message", role: "user", content: "hi" }]);
        assert.deepEqual(body.tools, [
          {
            type: "function",
            name: "read_file",
            description: "Reads a file.",
            parameters: { type: "object", properties: { path: { type: "string" } } },
            strict: false,
          },
        ]);
        assert.equal(body.store, false);
        // Not a known reasoning model: no reasoning parameters.
        assert.equal(body.reasoning, undefined);
        assert.equal(body.include, undefined);
      } else if (name === "openai-chat") {
        assert.equal(fake.requests[0]!.path, "/v1/chat/completions");
        assert.deepEqual(body.stream_options, { include_usage: true });
        assert.deepEqual(body.messages, [
          { role: "system", content: "You are a test." },
          { role: "user", content: "hi" },
        ]);
        assert.equal(body.tools[0].type, "function");
        assert.equal(body.tools[0].function.name, "read_file");
      } else {
        assert.equal(fake.requests[0]!.path, "/v1/messages");
        assert.equal(body.system, "You are a test.");
        assert.equal(body.max_tokens, 8192);
        assert.deepEqual(body.messages, [{ role: "user", content: [{ type: "text", text: "hi" }] }]);
        assert.equal(body.tools[0].input_schema.type, "object");
        assert.equal(body.thinking, undefined);
      }
    });

    test("streams reasoning before text", async () => {
      fake.enqueue({ kind: "response", reasoning: ["Let me ", "think."], text: "The answer is 4." });
      const { events, error } = await run(makeProvider(name, fake));
      assert.equal(error, undefined);
      assert.deepEqual(textOf(events, "reasoningDelta"), ["Let me ", "think."]);
      assert.equal(textOf(events, "textDelta").join(""), "The answer is 4.");
      const firstText = events.findIndex((e) => e.type === "textDelta");
      assert.ok(events.findLastIndex((e) => e.type === "reasoningDelta") < firstText);
      // Only Anthropic signs reasoning unasked; the Responses API does when asked (see below).
      const signatures = events.filter((e) => e.type === "reasoningSignature");
      assert.equal(signatures.length, name === "anthropic" ? 1 : 0);
    });

    test("streams tool calls and sends the results back in the API's shape", async () => {
      fake.enqueue(
        {
          kind: "response",
          text: "Reading both.",
          toolCalls: [
            { id: "call_a", name: "read_file", arguments: { path: "a.txt" }, chunks: 4 },
            { id: "call_b", name: "read_file", arguments: '{"path":"b.txt"}' },
          ],
        },
        { kind: "response", text: "Done." },
      );
      const provider = makeProvider(name, fake);
      const first = await run(provider);
      assert.equal(first.error, undefined);
      const starts = first.events.filter((e) => e.type === "toolCallStart");
      assert.deepEqual(starts, [
        { type: "toolCallStart", index: 0, id: "call_a", name: "read_file" },
        { type: "toolCallStart", index: 1, id: "call_b", name: "read_file" },
      ]);
      const argsOf = (index: number): string[] =>
        first.events.flatMap((e) => (e.type === "toolCallDelta" && e.index === index ? [e.argumentsDelta] : []));
      assert.equal(argsOf(0).length, 4);
      assert.deepEqual(JSON.parse(argsOf(0).join("")), { path: "a.txt" });
      assert.equal(argsOf(1).join(""), '{"path":"b.txt"}');
      assert.deepEqual(first.events.at(-1), { type: "stop", reason: "toolCalls" });

      const history: ConversationMessage[] = [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: "Reading both.",
          toolCalls: [
            { id: "call_a", name: "read_file", argumentsText: argsOf(0).join("") },
            { id: "call_b", name: "read_file", argumentsText: argsOf(1).join("") },
          ],
        },
        { role: "tool", toolCallId: "call_a", toolName: "read_file", content: "contents of a" },
        { role: "tool", toolCallId: "call_b", toolName: "read_file", content: "no such file", isError: true },
      ];
      const second = await run(provider, request(history));
      assert.equal(second.error, undefined);
      assert.equal(textOf(second.events, "textDelta").join(""), "Done.");

      const body = fake.requests[1]!.body;
      if (name === "openai") {
        assert.deepEqual(body.input, [
          { type: "message", role: "user", content: "hi" },
          { type: "message", role: "assistant", content: "Reading both." },
          { type: "function_call", call_id: "call_a", name: "read_file", arguments: '{"path":"a.txt"}' },
          { type: "function_call", call_id: "call_b", name: "read_file", arguments: '{"path":"b.txt"}' },
          { type: "function_call_output", call_id: "call_a", output: "contents of a" },
          { type: "function_call_output", call_id: "call_b", output: "no such file" },
        ]);
      } else if (name === "openai-chat") {
        assert.deepEqual(body.messages.slice(1), [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: "Reading both.",
            tool_calls: [
              { id: "call_a", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
              { id: "call_b", type: "function", function: { name: "read_file", arguments: '{"path":"b.txt"}' } },
            ],
          },
          { role: "tool", tool_call_id: "call_a", content: "contents of a" },
          { role: "tool", tool_call_id: "call_b", content: "no such file" },
        ]);
      } else {
        assert.deepEqual(body.messages, [
          { role: "user", content: [{ type: "text", text: "hi" }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Reading both." },
              { type: "tool_use", id: "call_a", name: "read_file", input: { path: "a.txt" } },
              { type: "tool_use", id: "call_b", name: "read_file", input: { path: "b.txt" } },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "call_a", content: "contents of a" },
              { type: "tool_result", tool_use_id: "call_b", content: "no such file", is_error: true },
            ],
          },
        ]);
      }
    });

    test("maps usage, including cached and reasoning tokens", async () => {
      fake.enqueue({ kind: "response", text: "ok", usage: { input: 1200, output: 80, cacheRead: 1000, reasoning: 30 } });
      const { events } = await run(makeProvider(name, fake));
      const usage = events.find((e) => e.type === "usage");
      assert.deepEqual(usage, {
        type: "usage",
        usage: { inputTokens: 1200, outputTokens: 80, cachedInputTokens: 1000, reasoningTokens: 30 },
      });
    });

    test("maps max-token stops", async () => {
      fake.enqueue({ kind: "response", text: "trunc", stopReason: "maxTokens" });
      const { events } = await run(makeProvider(name, fake));
      assert.deepEqual(events.at(-1), { type: "stop", reason: "maxTokens" });
    });

    test("401 is an authentication error with the API's message, not retried", async () => {
      fake.enqueue({ kind: "error", status: 401, message: "The key sk-bad is not valid." });
      const { events, error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      const failure = assertProviderError(error, "authentication");
      assert.equal(failure.httpStatus, 401);
      assert.equal(failure.beforeOutput, true);
      assert.match(failure.message, /HTTP 401/);
      assert.match(failure.message, /The key sk-bad is not valid/);
      assert.equal(events.length, 0);
      assert.equal(fake.requests.length, 1);
    });

    test("429 is retried after the wait its retry-after header asks for", async () => {
      fake.enqueue({ kind: "error", status: 429, retryAfterSeconds: 0.15 }, { kind: "response", text: "after retry" });
      const waits: number[] = [];
      const sleep = (ms: number, signal: AbortSignal): Promise<void> => {
        waits.push(ms);
        return abortableSleep(ms, signal);
      };
      // A long backoff proves the wait came from the header.
      const provider = makeProvider(name, fake, { maxAttempts: 3, baseDelayMs: 20_000, sleep });
      const started = performance.now();
      const { events, error } = await run(provider);
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "after retry");
      assert.equal(fake.requests.length, 2);
      assert.deepEqual(waits, [150]);
      assert.ok(performance.now() - started >= 145, "the retry should wait for the retry-after");
    });

    test("429 without retries is rateLimited and carries the retry-after", async () => {
      fake.enqueue({ kind: "error", status: 429, retryAfterSeconds: 2 });
      const { error } = await run(makeProvider(name, fake));
      const failure = assertProviderError(error, "rateLimited");
      assert.equal(failure.httpStatus, 429);
      assert.equal(failure.retryAfterMs, 2000);
    });

    test("500 is retried, then succeeds", async () => {
      fake.enqueue({ kind: "error", status: 500 }, { kind: "response", text: "recovered" });
      const { events, error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "recovered");
      assert.equal(fake.requests.length, 2);
    });

    test("500 without retries is a providerError with the status", async () => {
      fake.enqueue({ kind: "error", status: 500, message: "Something broke." });
      const { error } = await run(makeProvider(name, fake));
      const failure = assertProviderError(error, "providerError");
      assert.equal(failure.httpStatus, 500);
      assert.match(failure.message, /HTTP 500.*Something broke/);
      assert.equal(fake.requests.length, 1);
    });

    test("a too-long prompt is contextWindowExceeded, not retried", async () => {
      fake.enqueue({ kind: "error", status: 400, ...CONTEXT_OVERFLOW[name] });
      const { error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      assert.equal(assertProviderError(error, "contextWindowExceeded").httpStatus, 400);
      assert.equal(fake.requests.length, 1);
    });

    test("a stream cut mid-output fails with beforeOutput false and is not retried", async () => {
      fake.enqueue(
        { kind: "response", text: ["one ", "two ", "three ", "four"], cutAfterChunks: 2 },
        { kind: "response", text: "not used" },
      );
      const { events, error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      assert.deepEqual(textOf(events, "textDelta"), ["one ", "two "]);
      const failure = assertProviderError(error, "connection");
      assert.equal(failure.beforeOutput, false);
      assert.equal(fake.requests.length, 1);
    });

    test("a stream cut before any output fails with beforeOutput true", async () => {
      fake.enqueue({ kind: "response", text: ["never"], cutAfterChunks: 0 });
      const { events, error } = await run(makeProvider(name, fake));
      assert.equal(events.length, 0);
      assert.equal(assertProviderError(error, "connection").beforeOutput, true);
    });

    test("a stream cut before any output is retried", async () => {
      fake.enqueue({ kind: "response", text: ["never"], cutAfterChunks: 0 }, { kind: "response", text: "second try" });
      const { events, error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "second try");
      assert.equal(fake.requests.length, 2);
    });

    test("an in-stream server error before any output is retried", async () => {
      fake.enqueue({ kind: "response", streamError: {} }, { kind: "response", text: "recovered" });
      const { events, error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "recovered");
      assert.equal(fake.requests.length, 2);
    });

    test("an in-stream server error after output fails the call", async () => {
      fake.enqueue({ kind: "response", text: ["partial"], streamError: { message: "Boom." } }, { kind: "response", text: "not used" });
      const { events, error } = await run(makeProvider(name, fake, { maxAttempts: 3 }));
      assert.deepEqual(textOf(events, "textDelta"), ["partial"]);
      const failure = assertProviderError(error, "providerError");
      assert.equal(failure.beforeOutput, false);
      assert.match(failure.message, /Boom/);
      assert.equal(fake.requests.length, 1);
    });

    test("an unreachable server is a connection error", async () => {
      const port = await closedPort();
      const baseURL = `http://127.0.0.1:${port}`;
      const provider =
        name === "openai"
          ? new OpenAIResponsesProvider({ baseURL: `${baseURL}/v1`, apiKey: "k" })
          : name === "openai-chat"
            ? new OpenAIChatProvider({ baseURL: `${baseURL}/v1`, apiKey: "k" })
            : new AnthropicProvider({ baseURL, apiKey: "k" });
      const { error } = await run(provider);
      const failure = assertProviderError(error, "connection");
      assert.equal(failure.beforeOutput, true);
      assert.match(failure.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
    });

    test("aborting a held-open stream ends the iterator promptly without an error", async () => {
      fake.enqueue({ kind: "response", text: ["partial"], holdOpen: true });
      const controller = new AbortController();
      const events: ModelStreamEvent[] = [];
      let abortedAt = 0;
      for await (const event of makeProvider(name, fake, {}).stream(request(), controller.signal)) {
        events.push(event);
        if (event.type === "textDelta") {
          abortedAt = Date.now();
          controller.abort();
        }
      }
      assert.ok(Date.now() - abortedAt < 500, "the stream should end right after the abort");
      assert.deepEqual(textOf(events, "textDelta"), ["partial"]);
      assert.equal(
        events.some((e) => e.type === "stop"),
        false,
      );
    });

    test("aborting during a retry wait ends promptly", async () => {
      fake.enqueue({ kind: "error", status: 429, retryAfterSeconds: 5 });
      const controller = new AbortController();
      const running = run(makeProvider(name, fake, { maxAttempts: 2, maxDelayMs: 10_000 }), request(), controller.signal);
      await fake.waitForRequests(1);
      await delay(100); // let the 429 arrive, so the retry wait has begun
      const abortedAt = Date.now();
      controller.abort();
      const { events, error } = await running;
      assert.ok(Date.now() - abortedAt < 300, "the abort should not wait for the retry");
      assert.equal(error, undefined);
      assert.equal(events.length, 0);
      assert.equal(fake.requests.length, 1);
    });

    test("an already-aborted signal makes no request", async () => {
      const controller = new AbortController();
      controller.abort();
      const { events, error } = await run(makeProvider(name, fake, {}), request(), controller.signal);
      assert.equal(error, undefined);
      assert.equal(events.length, 0);
      assert.equal(fake.requests.length, 0);
    });
  });
}

describe("openai (Responses API) specifics", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  test("a reasoning model gets reasoning parameters, and its encrypted reasoning goes back with the tool result", async () => {
    fake.enqueue(
      {
        kind: "response",
        reasoning: ["Checking ", "the file."],
        toolCalls: [{ id: "call_r", name: "read_file", arguments: { path: "x" } }],
      },
      { kind: "response", text: "Done." },
    );
    const provider = rawProvider("openai", fake);
    const first = await run(provider, { ...request(), model: "gpt-5" });
    assert.equal(first.error, undefined);
    const body = fake.requests[0]!.body;
    assert.deepEqual(body.reasoning, { effort: "medium", summary: "auto" });
    assert.deepEqual(body.include, ["reasoning.encrypted_content"]);
    assert.equal(body.store, false);

    assert.equal(textOf(first.events, "reasoningDelta").join(""), "Checking the file.");
    const signed = first.events.filter((e) => e.type === "reasoningSignature");
    assert.equal(signed.length, 1);
    const signature = signed[0]!.type === "reasoningSignature" ? signed[0]!.signature : "";
    assert.ok(signature.startsWith(OPENAI_REASONING_PREFIX));
    const kept = JSON.parse(signature.slice(OPENAI_REASONING_PREFIX.length)) as Array<{ encrypted_content: string }>;
    assert.match(kept[0]!.encrypted_content, /^gAAAA/);

    const history: ConversationMessage[] = [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: "",
        reasoning: { text: "Checking the file.", signature },
        toolCalls: [{ id: "call_r", name: "read_file", argumentsText: '{"path":"x"}' }],
      },
      { role: "tool", toolCallId: "call_r", toolName: "read_file", content: "x!" },
    ];
    await run(provider, { ...request(history), model: "gpt-5" });
    assert.deepEqual(fake.requests[1]!.body.input, [
      { type: "message", role: "user", content: "hi" },
      // No id: with store:false the server has no item to refer to.
      { type: "reasoning", summary: [{ type: "summary_text", text: "Checking the file." }], encrypted_content: kept[0]!.encrypted_content },
      { type: "function_call", call_id: "call_r", name: "read_file", arguments: '{"path":"x"}' },
      { type: "function_call_output", call_id: "call_r", output: "x!" },
    ]);
  });

  test("another provider's reasoning signature is not sent", async () => {
    const provider = rawProvider("openai", fake);
    const reasoning = { text: "thinking", signature: "EqQBCkYIBRgCKkB" };
    await run(
      provider,
      request([
        { role: "user", content: "q" },
        { role: "assistant", content: "a", reasoning },
        { role: "user", content: "q2" },
      ]),
    );
    assert.deepEqual(
      fake.requests[0]!.body.input.map((item: { type: string }) => item.type),
      ["message", "message", "message"],
    );
  });

  test("response.failed with context_length_exceeded is contextWindowExceeded", async () => {
    fake.enqueue({ kind: "response", streamError: { code: "context_length_exceeded", message: CONTEXT_OVERFLOW.openai.message } });
    const { error } = await run(withRetries(rawProvider("openai", fake), { baseDelayMs: 5 }));
    assertProviderError(error, "contextWindowExceeded");
    assert.equal(fake.requests.length, 1);
  });

  test("an in-stream rate limit is retried after the wait its message names", async () => {
    const message =
      "Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 0.05s.";
    fake.enqueue({ kind: "response", streamError: { code: "rate_limit_exceeded", message } }, { kind: "response", text: "ok" });
    const waits: number[] = [];
    const sleep = (ms: number, signal: AbortSignal): Promise<void> => (waits.push(ms), abortableSleep(ms, signal));
    const { events, error } = await run(withRetries(rawProvider("openai", fake), { baseDelayMs: 20_000, sleep }));
    assert.equal(error, undefined);
    assert.equal(textOf(events, "textDelta").join(""), "ok");
    assert.deepEqual(waits, [50]);
  });

  test("max_output_tokens goes in the request", async () => {
    await run(rawProvider("openai", fake), { ...request(), maxOutputTokens: 321 });
    assert.equal(fake.requests[0]!.body.max_output_tokens, 321);
  });
});

describe("anthropic thinking", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  test("requests thinking when a budget is set and sends signed thinking back first", async () => {
    fake.enqueue({
      kind: "response",
      reasoning: "Pondering.",
      toolCalls: [{ id: "toolu_1", name: "read_file", arguments: { path: "x" } }],
    });
    const provider = new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "k", maxRetries: 0, thinkingBudgetTokens: 2048 });
    const { events } = await run(provider);
    const signature = events.find((e) => e.type === "reasoningSignature");
    assert.ok(signature && signature.type === "reasoningSignature" && signature.signature.length > 10);
    assert.deepEqual(fake.requests[0]!.body.thinking, { type: "enabled", budget_tokens: 2048 });
    assert.ok(fake.requests[0]!.body.max_tokens > 2048);

    const history: ConversationMessage[] = [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: "",
        reasoning: { text: textOf(events, "reasoningDelta").join(""), signature: signature.signature },
        toolCalls: [{ id: "toolu_1", name: "read_file", argumentsText: '{"path":"x"}' }],
      },
      { role: "tool", toolCallId: "toolu_1", toolName: "read_file", content: "x!" },
      { role: "user", content: "and also this" },
    ];
    await run(provider, request(history));
    assert.deepEqual(fake.requests[1]!.body.messages.slice(1), [
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Pondering.", signature: signature.signature },
          { type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "x" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "x!" },
          { type: "text", text: "and also this" },
        ],
      },
    ]);
  });

  test('a request with thinking "adaptive" asks for adaptive thinking in place of a configured budget', async () => {
    const provider = new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "k", maxRetries: 0, thinkingBudgetTokens: 2048 });
    await run(provider, { ...request(), thinking: "adaptive" });
    assert.deepEqual(fake.requests[0]!.body.thinking, { type: "adaptive" });
    assert.equal(fake.requests[0]!.body.max_tokens, 16384);
    // Without it, the configured budget still applies; other providers ignore the mode.
    await run(provider);
    assert.deepEqual(fake.requests[1]!.body.thinking, { type: "enabled", budget_tokens: 2048 });
    await run(rawProvider("openai-chat", fake), { ...request(), thinking: "adaptive" });
    assert.equal(fake.requests[2]!.body.thinking, undefined);
  });

  test("reasoning signed by another provider is not sent back", async () => {
    const provider = new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "k", maxRetries: 0 });
    const reasoning = { text: "from gpt-5", signature: `${OPENAI_REASONING_PREFIX}[]` };
    await run(
      provider,
      request([
        { role: "user", content: "q" },
        { role: "assistant", content: "a", reasoning },
        { role: "user", content: "q2" },
      ]),
    );
    assert.deepEqual(fake.requests[0]!.body.messages[1], { role: "assistant", content: [{ type: "text", text: "a" }] });
  });

  test("reasoning without a signature is not sent back", async () => {
    const provider = new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "k", maxRetries: 0 });
    await run(
      provider,
      request([
        { role: "user", content: "q" },
        { role: "assistant", content: "a", reasoning: { text: "unsigned" } },
        { role: "user", content: "q2" },
      ]),
    );
    assert.deepEqual(fake.requests[0]!.body.messages[1], { role: "assistant", content: [{ type: "text", text: "a" }] });
  });
});

/** A tool call's arguments as a consumer must read them: the deltas, replaced by whole arguments when they come. */
function argumentsOf(events: ModelStreamEvent[], index: number): string {
  let text = "";
  for (const e of events) {
    if (e.type === "toolCallDelta" && e.index === index) text += e.argumentsDelta;
    if (e.type === "toolCallArguments" && e.index === index) text = e.argumentsText;
  }
  return text;
}

describe("tool-call arguments sent whole, without deltas (compatible servers and proxies)", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  for (const name of ["openai", "anthropic"] as const) {
    test(`${name}: the finished call's arguments are the call's arguments`, async () => {
      fake.enqueue({
        kind: "response",
        toolCalls: [
          { id: "call_a", name: "read_file", arguments: { path: "a.txt" }, wholeArguments: true },
          { id: "call_b", name: "read_file", arguments: { path: "b.txt" } },
        ],
      });
      const { events, error } = await run(rawProvider(name, fake));
      assert.equal(error, undefined);
      assert.equal(
        events.filter((e) => e.type === "toolCallDelta" && e.index === 0).length,
        0,
        "the server sent no deltas for the first call",
      );
      assert.deepEqual(JSON.parse(argumentsOf(events, 0)), { path: "a.txt" });
      assert.deepEqual(JSON.parse(argumentsOf(events, 1)), { path: "b.txt" });
    });
  }
});

describe("openai-chat compatible servers", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  test("sends max_tokens to compatible servers and null content for tool-only turns", async () => {
    const provider = new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "k", maxRetries: 0 });
    await run(provider, {
      ...request([
        { role: "user", content: "q" },
        { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "read_file", argumentsText: "" }] },
        { role: "tool", toolCallId: "c1", toolName: "read_file", content: "r" },
      ]),
      maxOutputTokens: 500,
    });
    const body = fake.requests[0]!.body;
    assert.equal(body.max_tokens, 500);
    assert.equal(body.max_completion_tokens, undefined);
    assert.deepEqual(body.messages[2], {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }],
    });
  });
});

describe("createProvider", () => {
  const problem = async (built: ReturnType<typeof createProvider>): Promise<string> => {
    const value = await built;
    assert.ok(isProviderConfigProblem(value), "expected a configuration problem");
    return value.problem;
  };
  const provider = async (built: ReturnType<typeof createProvider>): Promise<ModelProvider> => {
    const value = await built;
    assert.ok(!isProviderConfigProblem(value), isProviderConfigProblem(value) ? value.problem : "");
    return value;
  };

  test("with nothing configured, explains what to set", async () => {
    assert.equal(
      await problem(createProvider({ env: {} })),
      "No model provider is configured. Set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or ANTHROPIC_API_KEY, start Ollama, or start with --provider <openai|openai-chat|anthropic|ollama|scripted> --model <name>.",
    );
  });

  test("picks from the environment: anthropic, then openai-chat for a compatible server, then openai", async () => {
    assert.equal((await provider(createProvider({ env: { ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" } }))).name, "anthropic");
    assert.equal((await provider(createProvider({ env: { OPENAI_API_KEY: "o" } }))).name, "openai");
    assert.equal(
      (await provider(createProvider({ env: { OPENAI_API_KEY: "o", OPENAI_BASE_URL: "https://api.openai.com/v1" } }))).name,
      "openai",
    );
    assert.equal((await provider(createProvider({ env: { OPENAI_BASE_URL: "http://localhost:11434/v1" } }))).name, "openai-chat");
    assert.equal(
      (await provider(createProvider({ env: { OPENAI_API_KEY: "o", OPENAI_BASE_URL: "https://openrouter.ai/api/v1" } }))).name,
      "openai-chat",
    );
  });

  test("honors an explicit provider and the model", async () => {
    const env = { ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" };
    const chosen = await provider(createProvider({ provider: "openai-chat", model: "llama3", env }));
    assert.equal(chosen.name, "openai-chat");
    assert.equal(chosen.defaultModel, "llama3");
    assert.equal((await provider(createProvider({ provider: "OpenAI", env }))).name, "openai");
    assert.equal((await provider(createProvider({ provider: "openai", env }))).defaultModel, "gpt-5");
    assert.equal((await provider(createProvider({ provider: "anthropic", env }))).defaultModel, "claude-sonnet-4-6");
    assert.equal((await provider(createProvider({ provider: "openai-chat", env }))).defaultModel, "gpt-4.1");
    assert.equal((await provider(createProvider({ provider: "ollama", env: {} }))).name, "ollama");
  });

  test("the plan (what the model catalog reads) names the provider and default model its build has", async () => {
    const env = { ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" };
    for (const selection of [
      { env },
      { provider: "openai", env },
      { provider: "openai-chat", model: "llama3", env },
      { provider: "ollama", env: {} },
      { provider: "anthropic", model: "claude-opus-4-6", env },
    ]) {
      const plan = planProvider(selection);
      assert.ok(!isProviderConfigProblem(plan));
      const built = await provider(createProvider(selection));
      assert.deepEqual([plan.name, plan.defaultModel], [built.name, built.defaultModel]);
    }
    assert.ok(isProviderConfigProblem(planProvider({ provider: "anthropic", env: { OPENAI_API_KEY: "o" } })));
  });

  test("an explicit provider needs its key unless a base URL is set", async () => {
    assert.match(await problem(createProvider({ provider: "anthropic", env: { OPENAI_API_KEY: "o" } })), /ANTHROPIC_API_KEY/);
    assert.match(await problem(createProvider({ provider: "openai-chat", env: { ANTHROPIC_API_KEY: "a" } })), /OPENAI_API_KEY/);
    assert.match(await problem(createProvider({ provider: "openai", env: { ANTHROPIC_API_KEY: "a" } })), /OPENAI_API_KEY.*openai-chat/);
    assert.equal(
      (await provider(createProvider({ provider: "anthropic", env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:1" } }))).name,
      "anthropic",
    );
    assert.equal(
      (await provider(createProvider({ provider: "openai", env: { OPENAI_BASE_URL: "http://127.0.0.1:1/v1" } }))).name,
      "openai",
    );
  });

  test("an unknown provider lists the valid names", async () => {
    const text = await problem(createProvider({ provider: "gemini", env: { OPENAI_API_KEY: "o" } }));
    assert.match(text, /gemini/);
    assert.match(text, /openai, openai-chat, anthropic, ollama, scripted/);
  });

  test("a local server works with the placeholder key", async () => {
    const fake = await FakeModelServer.start();
    try {
      fake.enqueue({ kind: "response", text: "local" });
      const local = await provider(createProvider({ model: "qwen3", env: { OPENAI_BASE_URL: fake.openaiBaseURL } }));
      const { events, error } = await run(local, { ...request(), model: "" });
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "local");
      assert.equal(fake.requests[0]!.headers["authorization"], "Bearer not-needed");
      assert.equal(fake.requests[0]!.body.model, "qwen3");
    } finally {
      await fake.close();
    }
  });

  test("providers come wrapped in the retry policy, which the selection can shape", async () => {
    const fake = await FakeModelServer.start();
    try {
      const env = { OPENAI_BASE_URL: fake.openaiBaseURL };
      fake.enqueue({ kind: "error", status: 503 }, { kind: "response", text: "second" });
      const retried = await run(await provider(createProvider({ env, retry: { baseDelayMs: 1 } })));
      assert.equal(retried.error, undefined);
      assert.equal(fake.requests.length, 2);

      fake.enqueue({ kind: "error", status: 503 }, { kind: "response", text: "not used" });
      const once = await run(await provider(createProvider({ env, retry: { maxAttempts: 1 } })));
      assert.equal(assertProviderError(once.error, "providerError").httpStatus, 503);
      assert.equal(fake.requests.length, 3);
    } finally {
      await fake.close();
    }
  });

  test("importing select.js loads neither SDK", async () => {
    const selectUrl = new URL("../../src/providers/select.js", import.meta.url).href;
    // A resolve hook in a fresh process reports every bare specifier that gets imported.
    const hook = `data:text/javascript,${encodeURIComponent(
      "export async function resolve(s, c, next) { if (/openai|anthropic-ai/.test(s) && !s.startsWith('file:') && !s.startsWith('.')) process.stdout.write('LOADED ' + s + '\\n'); return next(s, c); }",
    )}`;
    const script = `import { register } from "node:module"; register(${JSON.stringify(hook)}); await import(${JSON.stringify(selectUrl)}); console.log("done");`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      cwd: fileURLToPath(new URL(".", import.meta.url)),
    });
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), "done");
  });
});

describe("fake model server", () => {
  test("serves model lists in both shapes and answers 'ok' when the queue is empty", async () => {
    const fake = await FakeModelServer.start();
    try {
      const openai = (await (await fetchOrSayWhy(`${fake.openaiBaseURL}/models`)).json()) as {
        object: string;
        data: Array<{ object: string }>;
      };
      assert.equal(openai.object, "list");
      assert.equal(openai.data[0]!.object, "model");
      const anthropic = (await (
        await fetchOrSayWhy(`${fake.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } })
      ).json()) as {
        data: Array<{ type: string; display_name: string }>;
        has_more: boolean;
        first_id: string;
      };
      assert.equal(anthropic.data[0]!.type, "model");
      assert.equal(anthropic.has_more, false);
      assert.equal(typeof anthropic.first_id, "string");

      const waiting = fake.waitForRequests(3);
      const { events } = await run(new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "k", maxRetries: 0 }));
      await waiting;
      assert.equal(textOf(events, "textDelta").join(""), "ok");
      assert.ok(fake.stats.deltasSent >= 1);
    } finally {
      await fake.close();
    }
  });

  test("streams Responses events in the API's order, typed and numbered", async () => {
    const fake = await FakeModelServer.start();
    try {
      fake.enqueue({
        kind: "response",
        reasoning: ["Hmm."],
        text: ["Hi", "!"],
        toolCalls: [{ id: "call_1", name: "read_file", arguments: { path: "a" }, chunks: 2 }],
      });
      const response = await fetchOrSayWhy(`${fake.openaiBaseURL}/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5", input: "hi", stream: true, include: ["reasoning.encrypted_content"] }),
      });
      assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
      const events = (await response.text())
        .split("\n\n")
        .filter(Boolean)
        .map((block) => {
          const [eventLine, dataLine] = block.split("\n");
          const data = JSON.parse(dataLine!.replace(/^data: /, "")) as { type: string; sequence_number: number };
          assert.equal(eventLine, `event: ${data.type}`);
          return data;
        });
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        events.map((_, i) => i),
      );
      assert.deepEqual(
        events.map((e) => e.type),
        [
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.reasoning_summary_part.added",
          "response.reasoning_summary_text.delta",
          "response.reasoning_summary_text.done",
          "response.reasoning_summary_part.done",
          "response.output_item.done",
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta",
          "response.output_text.delta",
          "response.output_text.done",
          "response.content_part.done",
          "response.output_item.done",
          "response.output_item.added",
          "response.function_call_arguments.delta",
          "response.function_call_arguments.delta",
          "response.function_call_arguments.done",
          "response.output_item.done",
          "response.completed",
        ],
      );
      const completed = events.at(-1) as unknown as {
        response: { status: string; output: Array<{ type: string }>; usage: { total_tokens: number } };
      };
      assert.equal(completed.response.status, "completed");
      assert.deepEqual(
        completed.response.output.map((item) => item.type),
        ["reasoning", "message", "function_call"],
      );
      assert.ok(completed.response.usage.total_tokens > 0);
    } finally {
      await fake.close();
    }
  });

  test("answers non-streaming Responses calls the SDK can read", async () => {
    const fake = await FakeModelServer.start();
    try {
      fake.enqueue({ kind: "response", text: "whole answer" });
      const client = new OpenAI({ baseURL: fake.openaiBaseURL, apiKey: "k", maxRetries: 0 });
      const response = await client.responses.create({ model: "gpt-4.1", input: "hi" });
      assert.equal(response.output_text, "whole answer");
      assert.equal(response.status, "completed");
    } finally {
      await fake.close();
    }
  });
});

async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
