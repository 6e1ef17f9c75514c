// Both model providers, run through their real SDKs over real HTTP against the fake model server.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { setTimeout as delay } from "node:timers/promises";
import { FakeModelServer } from "./support/fake-model-server.js";
import { OpenAIChatProvider } from "../src/providers/openai-chat.js";
import { AnthropicProvider } from "../src/providers/anthropic.js";
import { createProvider, isProviderConfigProblem } from "../src/providers/select.js";
import { ProviderError } from "../src/providers/provider.js";
import type { ConversationMessage, ModelProvider, ModelRequest, ModelStreamEvent } from "../src/providers/provider.js";

type ProviderName = "openai-chat" | "anthropic";

function makeProvider(name: ProviderName, fake: FakeModelServer, maxRetries = 0): ModelProvider {
  return name === "openai-chat"
    ? new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "test-key", maxRetries })
    : new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "test-key", maxRetries });
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

for (const name of ["openai-chat", "anthropic"] as const) {
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
      assert.deepEqual(events.slice(-2).map((e) => e.type), ["usage", "stop"]);
      assert.deepEqual(events.at(-1), { type: "stop", reason: "end" });

      const body = fake.requests[0]!.body;
      assert.equal(body.model, "test-model");
      assert.equal(body.stream, true);
      if (name === "openai-chat") {
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

      const sent = fake.requests[1]!.body.messages;
      if (name === "openai-chat") {
        assert.deepEqual(sent.slice(1), [
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
        assert.deepEqual(sent, [
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

    test("401 is an authentication error with the API's message", async () => {
      fake.enqueue({ kind: "error", status: 401, message: "The key sk-bad is not valid." });
      const { events, error } = await run(makeProvider(name, fake));
      const failure = assertProviderError(error, "authentication");
      assert.equal(failure.httpStatus, 401);
      assert.equal(failure.beforeOutput, true);
      assert.match(failure.message, /HTTP 401/);
      assert.match(failure.message, /The key sk-bad is not valid/);
      assert.equal(events.length, 0);
    });

    test("429 is retried after retry-after when retries are allowed", async () => {
      fake.enqueue({ kind: "error", status: 429, retryAfterSeconds: 0.01 }, { kind: "response", text: "after retry" });
      const started = Date.now();
      const { events, error } = await run(makeProvider(name, fake, 1));
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "after retry");
      assert.equal(fake.requests.length, 2);
      assert.ok(Date.now() - started < 2000, "retry-after-ms should keep the wait short");
    });

    test("429 without retries is rateLimited", async () => {
      fake.enqueue({ kind: "error", status: 429 });
      const { error } = await run(makeProvider(name, fake));
      assert.equal(assertProviderError(error, "rateLimited").httpStatus, 429);
    });

    test("500 without retries is a providerError with the status", async () => {
      fake.enqueue({ kind: "error", status: 500, message: "Something broke." });
      const { error } = await run(makeProvider(name, fake));
      const failure = assertProviderError(error, "providerError");
      assert.equal(failure.httpStatus, 500);
      assert.match(failure.message, /HTTP 500.*Something broke/);
      assert.equal(fake.requests.length, 1);
    });

    test("a too-long prompt is contextWindowExceeded", async () => {
      const message =
        name === "openai-chat"
          ? "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."
          : "prompt is too long: 210000 tokens > 200000 maximum";
      fake.enqueue({ kind: "error", status: 400, message });
      const { error } = await run(makeProvider(name, fake));
      assert.equal(assertProviderError(error, "contextWindowExceeded").httpStatus, 400);
    });

    test("a stream cut mid-output fails with beforeOutput false", async () => {
      fake.enqueue({ kind: "response", text: ["one ", "two ", "three ", "four"], cutAfterChunks: 2 });
      const { events, error } = await run(makeProvider(name, fake));
      assert.deepEqual(textOf(events, "textDelta"), ["one ", "two "]);
      const failure = assertProviderError(error, "connection");
      assert.equal(failure.beforeOutput, false);
    });

    test("a stream cut before any output fails with beforeOutput true", async () => {
      fake.enqueue({ kind: "response", text: ["never"], cutAfterChunks: 0 });
      const { events, error } = await run(makeProvider(name, fake));
      assert.equal(events.length, 0);
      assert.equal(assertProviderError(error, "connection").beforeOutput, true);
    });

    test("an unreachable server is a connection error", async () => {
      const port = await closedPort();
      const provider =
        name === "openai-chat"
          ? new OpenAIChatProvider({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "k", maxRetries: 0 })
          : new AnthropicProvider({ baseURL: `http://127.0.0.1:${port}`, apiKey: "k", maxRetries: 0 });
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
      for await (const event of makeProvider(name, fake).stream(request(), controller.signal)) {
        events.push(event);
        if (event.type === "textDelta") {
          abortedAt = Date.now();
          controller.abort();
        }
      }
      assert.ok(Date.now() - abortedAt < 500, "the stream should end right after the abort");
      assert.deepEqual(textOf(events, "textDelta"), ["partial"]);
      assert.equal(events.some((e) => e.type === "stop"), false);
    });

    test("aborting during a retry wait ends promptly", async () => {
      // 1s keeps the SDK's leftover (unwatched) retry timer from holding the test process long.
      fake.enqueue({ kind: "error", status: 429, retryAfterSeconds: 1 });
      const controller = new AbortController();
      const running = run(makeProvider(name, fake, 1), request(), controller.signal);
      await fake.waitForRequests(1);
      await delay(100); // let the 429 arrive, so the SDK is in its retry wait
      const abortedAt = Date.now();
      controller.abort();
      const { events, error } = await running;
      assert.ok(Date.now() - abortedAt < 300, "the abort should not wait for the retry");
      assert.equal(error, undefined);
      assert.equal(events.length, 0);
    });

    test("an already-aborted signal makes no request", async () => {
      const controller = new AbortController();
      controller.abort();
      const { events, error } = await run(makeProvider(name, fake), request(), controller.signal);
      assert.equal(error, undefined);
      assert.equal(events.length, 0);
      assert.equal(fake.requests.length, 0);
    });
  });
}

describe("anthropic thinking", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  test("requests thinking when a budget is set and sends signed thinking back first", async () => {
    fake.enqueue({ kind: "response", reasoning: "Pondering.", toolCalls: [{ id: "toolu_1", name: "read_file", arguments: { path: "x" } }] });
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

  test("reasoning without a signature is not sent back", async () => {
    const provider = new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "k", maxRetries: 0 });
    await run(provider, request([{ role: "user", content: "q" }, { role: "assistant", content: "a", reasoning: { text: "unsigned" } }, { role: "user", content: "q2" }]));
    assert.deepEqual(fake.requests[0]!.body.messages[1], { role: "assistant", content: [{ type: "text", text: "a" }] });
  });
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
  const problem = (value: ReturnType<typeof createProvider>): string => {
    assert.ok(isProviderConfigProblem(value), "expected a configuration problem");
    return value.problem;
  };
  const provider = (value: ReturnType<typeof createProvider>): ModelProvider => {
    assert.ok(!isProviderConfigProblem(value), isProviderConfigProblem(value) ? value.problem : "");
    return value;
  };

  test("with nothing configured, explains what to set", () => {
    assert.equal(
      problem(createProvider({ env: {} })),
      "No model provider is configured. Set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or ANTHROPIC_API_KEY, or start with --provider <openai-chat|anthropic> --model <name>.",
    );
  });

  test("picks anthropic first, then openai-chat, from the environment", () => {
    assert.equal(provider(createProvider({ env: { ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" } })).name, "anthropic");
    assert.equal(provider(createProvider({ env: { OPENAI_API_KEY: "o" } })).name, "openai-chat");
    assert.equal(provider(createProvider({ env: { OPENAI_BASE_URL: "http://localhost:11434/v1" } })).name, "openai-chat");
  });

  test("honors an explicit provider, its alias, and the model", () => {
    const chosen = provider(createProvider({ provider: "openai", model: "llama3", env: { ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" } }));
    assert.equal(chosen.name, "openai-chat");
    assert.equal(chosen.defaultModel, "llama3");
    assert.equal(provider(createProvider({ provider: "anthropic", env: { ANTHROPIC_API_KEY: "a" } })).defaultModel, "claude-sonnet-4-5");
    assert.equal(provider(createProvider({ provider: "openai-chat", env: { OPENAI_API_KEY: "o" } })).defaultModel, "gpt-4.1");
  });

  test("an explicit provider needs its key unless a base URL is set", () => {
    assert.match(problem(createProvider({ provider: "anthropic", env: { OPENAI_API_KEY: "o" } })), /ANTHROPIC_API_KEY/);
    assert.match(problem(createProvider({ provider: "openai-chat", env: { ANTHROPIC_API_KEY: "a" } })), /OPENAI_API_KEY/);
    assert.equal(provider(createProvider({ provider: "anthropic", env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:1" } })).name, "anthropic");
  });

  test("an unknown provider lists the valid names", () => {
    const text = problem(createProvider({ provider: "gemini", env: { OPENAI_API_KEY: "o" } }));
    assert.match(text, /gemini/);
    assert.match(text, /openai-chat/);
    assert.match(text, /anthropic/);
  });

  test("a local server works with the placeholder key", async () => {
    const fake = await FakeModelServer.start();
    try {
      fake.enqueue({ kind: "response", text: "local" });
      const local = provider(createProvider({ model: "qwen3", env: { OPENAI_BASE_URL: fake.openaiBaseURL } }));
      const { events, error } = await run(local, { ...request(), model: "" });
      assert.equal(error, undefined);
      assert.equal(textOf(events, "textDelta").join(""), "local");
      assert.equal(fake.requests[0]!.headers["authorization"], "Bearer not-needed");
      assert.equal(fake.requests[0]!.body.model, "qwen3");
    } finally {
      await fake.close();
    }
  });

  test("importing select.js loads neither SDK", () => {
    const selectUrl = new URL("../src/providers/select.js", import.meta.url).href;
    // A resolve hook in a fresh process reports every bare specifier that gets imported.
    const hook = `data:text/javascript,${encodeURIComponent(
      "export async function resolve(s, c, next) { if (/openai|anthropic-ai/.test(s) && !s.startsWith('file:') && !s.startsWith('.')) process.stdout.write('LOADED ' + s + '\\n'); return next(s, c); }",
    )}`;
    const script = `import { register } from "node:module"; register(${JSON.stringify(hook)}); await import(${JSON.stringify(selectUrl)}); console.log("done");`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", cwd: fileURLToPath(new URL(".", import.meta.url)) });
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), "done");
  });
});

describe("fake model server", () => {
  test("serves model lists in both shapes and answers 'ok' when the queue is empty", async () => {
    const fake = await FakeModelServer.start();
    try {
      const openai = (await (await fetch(`${fake.openaiBaseURL}/models`)).json()) as { object: string; data: Array<{ object: string }> };
      assert.equal(openai.object, "list");
      assert.equal(openai.data[0]!.object, "model");
      const anthropic = (await (await fetch(`${fake.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } })).json()) as {
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
});

async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
