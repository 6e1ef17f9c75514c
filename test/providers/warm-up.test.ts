import { strict as assert } from "node:assert";
import { test } from "node:test";
import { AnthropicProvider } from "../../src/providers/anthropic.js";
import { OpenAIChatProvider } from "../../src/providers/openai-chat.js";
import { OpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
import { FakeModelServer } from "../support/fake-model-server.js";

// prepare() runs each provider's streaming path on an answer made in memory: it must read that
// answer to its end (a stream the mapper found cut would reject) without a request to the server.
test("each provider's prepare() warms its streaming path without a request", async (t) => {
  const fake = await FakeModelServer.start();
  t.after(() => fake.close());
  const providers = [
    new OpenAIResponsesProvider({ baseURL: fake.openaiBaseURL, apiKey: "test" }),
    new OpenAIChatProvider({ baseURL: fake.openaiBaseURL, apiKey: "test" }),
    new AnthropicProvider({ baseURL: fake.anthropicBaseURL, apiKey: "test" }),
  ];
  for (const provider of providers) await provider.prepare();
  assert.equal(fake.requests.length, 0);

  // The providers still stream from the server afterwards, with their own fetch.
  for (const provider of providers) {
    fake.enqueue({ kind: "response", text: ["Hello"] });
    const events = [];
    for await (const event of provider.stream(
      { model: "m", system: "", messages: [{ role: "user", content: "hi" }], tools: [] },
      new AbortController().signal,
    ))
      events.push(event.type);
    assert.ok(events.includes("textDelta") && events.at(-1) === "stop", `${provider.name}: ${events.join(", ")}`);
  }
  assert.equal(fake.requests.length, 3);
});
