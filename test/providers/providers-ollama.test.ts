// Ollama: finding it (OLLAMA_HOST), detecting it as the default provider, and talking to it,
// against the fake model server's Ollama model list and Chat Completions endpoint.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { FakeModelServer } from "../support/fake-model-server.js";
import { ollamaBaseURL, ollamaRoot } from "../../src/providers/endpoints.js";
import { createProvider, detectDefaultProvider, isProviderConfigProblem } from "../../src/providers/select.js";
import { ProviderError, type ModelProvider, type ModelStreamEvent } from "../../src/providers/provider.js";

/** host:port of the fake, as people write OLLAMA_HOST. */
const hostOf = (fake: FakeModelServer): string => new URL(fake.url).host;

describe("OLLAMA_HOST", () => {
  test("is read the way Ollama reads it", () => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, "http://127.0.0.1:11434"],
      ["", "http://127.0.0.1:11434"],
      ["0.0.0.0", "http://127.0.0.1:11434"],
      ["0.0.0.0:8080", "http://127.0.0.1:8080"],
      [":9999", "http://127.0.0.1:9999"],
      ["gpu-box", "http://gpu-box:11434"],
      ["gpu-box:1234", "http://gpu-box:1234"],
      ["http://gpu-box", "http://gpu-box:80"],
      ["https://ollama.example.com", "https://ollama.example.com:443"],
      ["https://ollama.example.com:8443/proxy/", "https://ollama.example.com:8443/proxy"],
      ["[::1]:11434", "http://[::1]:11434"],
      ["  127.0.0.1:5000  ", "http://127.0.0.1:5000"],
    ];
    for (const [host, root] of cases) assert.equal(ollamaRoot(host === undefined ? {} : { OLLAMA_HOST: host }), root, String(host));
    assert.equal(ollamaBaseURL({}), "http://127.0.0.1:11434/v1");
  });
});

describe("detectDefaultProvider", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  // A generous timeout here: these tests are about the answer, and the suite may run on a busy machine.
  const patient = { timeoutMs: 5000 };

  test("picks a running Ollama and its first model", async () => {
    assert.deepEqual(await detectDefaultProvider({ OLLAMA_HOST: hostOf(fake) }, patient), { provider: "ollama", model: "llama3.2:latest" });
    assert.equal(fake.requests[0]!.method, "GET");
    assert.equal(fake.requests[0]!.path, "/api/tags");

    fake.ollamaModels = ["qwen3:8b", "llama3.2:latest"];
    assert.deepEqual(await detectDefaultProvider({ OLLAMA_HOST: fake.url }, patient), { provider: "ollama", model: "qwen3:8b" });
    fake.ollamaModels = [];
    assert.deepEqual(await detectDefaultProvider({ OLLAMA_HOST: fake.url }, patient), { provider: "ollama" });
  });

  test("prefers keys in the environment, without asking the network", async () => {
    const ollama = { OLLAMA_HOST: hostOf(fake) };
    assert.deepEqual(await detectDefaultProvider({ ...ollama, ANTHROPIC_API_KEY: "a" }), { provider: "anthropic" });
    assert.deepEqual(await detectDefaultProvider({ ...ollama, OPENAI_API_KEY: "o" }), { provider: "openai" });
    assert.deepEqual(await detectDefaultProvider({ ...ollama, OPENAI_BASE_URL: "http://localhost:8000/v1" }), { provider: "openai-chat" });
    assert.equal(fake.requests.length, 0);
  });

  test("is undefined, quickly, when nothing answers", async () => {
    const refused = await closedPort();
    let started = Date.now();
    assert.equal(await detectDefaultProvider({ OLLAMA_HOST: `127.0.0.1:${refused}` }), undefined);
    assert.ok(Date.now() - started < 1000);

    // A server that accepts the connection and never answers: the timeout decides.
    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      started = Date.now();
      const port = (silent.address() as AddressInfo).port;
      assert.equal(await detectDefaultProvider({ OLLAMA_HOST: `127.0.0.1:${port}` }, { timeoutMs: 100 }), undefined);
      assert.ok(Date.now() - started < 1000, "the timeout should end the wait");
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  test("is undefined when something else answers on the port", async () => {
    const other = http.createServer((_req, res) => res.writeHead(404).end("404 page not found"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const port = (other.address() as AddressInfo).port;
      assert.equal(await detectDefaultProvider({ OLLAMA_HOST: `127.0.0.1:${port}` }, patient), undefined);
    } finally {
      other.close();
    }
  });
});

describe("ollama provider", () => {
  let fake: FakeModelServer;
  beforeEach(async () => {
    fake = await FakeModelServer.start();
  });
  afterEach(() => fake.close());

  const build = async (env: NodeJS.ProcessEnv, model?: string): Promise<ModelProvider> => {
    const provider = await createProvider({ provider: "ollama", env, retry: { maxAttempts: 1 }, ...(model ? { model } : {}) });
    assert.ok(!isProviderConfigProblem(provider), isProviderConfigProblem(provider) ? provider.problem : "");
    return provider;
  };

  test("talks Chat Completions at OLLAMA_HOST/v1 without a real key", async () => {
    fake.enqueue({ kind: "response", text: "hello from llama" });
    const provider = await build({ OLLAMA_HOST: hostOf(fake) }, "llama3.2:latest");
    assert.equal(provider.name, "ollama");
    const events: ModelStreamEvent[] = [];
    for await (const event of provider.stream(
      { model: "", system: "s", messages: [{ role: "user", content: "hi" }], tools: [] },
      new AbortController().signal,
    )) {
      events.push(event);
    }
    assert.equal(events.flatMap((e) => (e.type === "textDelta" ? [e.delta] : [])).join(""), "hello from llama");
    assert.equal(fake.requests[0]!.path, "/v1/chat/completions");
    assert.equal(fake.requests[0]!.body.model, "llama3.2:latest");
    assert.equal(fake.requests[0]!.headers["authorization"], "Bearer ollama");
  });

  test("names Ollama when it cannot be reached", async () => {
    const port = await closedPort();
    const provider = await build({ OLLAMA_HOST: `127.0.0.1:${port}` });
    assert.equal(provider.defaultModel, "llama3.2");
    let failure: unknown;
    try {
      for await (const _ of provider.stream(
        { model: "", system: "", messages: [{ role: "user", content: "hi" }], tools: [] },
        new AbortController().signal,
      )) {
        // no events expected
      }
    } catch (error) {
      failure = error;
    }
    assert.ok(failure instanceof ProviderError);
    assert.equal(failure.code, "connection");
    assert.match(failure.message, new RegExp(`Could not reach Ollama at http://127\\.0\\.0\\.1:${port}/v1`));
  });
});

async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
