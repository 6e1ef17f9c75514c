import { strict as assert } from "node:assert";
import { test } from "node:test";
import { AnthropicProvider } from "../../src/providers/anthropic.js";
import { OpenAIChatProvider } from "../../src/providers/openai-chat.js";
import { OpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
import { CHAT_ANSWER, warmUp } from "../../src/providers/warm-up.js";
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

// A turn sent before the preparation is done runs the streaming path itself; a warm-up beside
// it would only hold it up.
test("the warm-up is left out once a real stream has opened while the SDK loaded", async () => {
  interface Client {
    withOptions(): Client;
  }
  const client: Client = { withOptions: () => client };
  const runs: string[] = [];
  const streamWith = (_load: unknown, request: { model: string }) =>
    (async function* () {
      runs.push(request.model);
      yield undefined;
    })();
  let streamed = false;
  let loaded!: (sdk: { client: Client }) => void;
  const loading = new Promise<{ client: Client }>((resolve) => (loaded = resolve));
  const preparing = warmUp(loading, CHAT_ANSWER, streamWith, () => streamed);
  streamed = true; // stream() was called while the SDK was loading
  loaded({ client });
  await preparing;
  assert.deepEqual(runs, []);

  await warmUp(Promise.resolve({ client }), CHAT_ANSWER, streamWith, () => false);
  assert.deepEqual(runs, ["warm-up"]);
});
