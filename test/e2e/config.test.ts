// Configuration end to end: config.json in the data directory, its precedence under flags and
// environment variables, and the per-thread and per-turn overrides above all of them.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { startHarness, text, type Harness } from "../support/harness.js";
import { ServerProcess, tempDir } from "../support/server-process.js";

function dataDirWith(config: unknown): string {
  const dir = tempDir("data");
  fs.writeFileSync(path.join(dir, "config.json"), typeof config === "string" ? config : JSON.stringify(config));
  return dir;
}

/** Runs one turn and returns the model-call request it made. */
async function oneTurn(h: Harness, threadId: string, params: Record<string, unknown> = {}) {
  const before = h.fake.requests.length;
  const started = await h.client.call("turn/start", { threadId, input: text("hi"), ...params });
  const end = await h.client.turnEnd(threadId, (started.turn as { id: string }).id);
  assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
  const request = h.fake.requests.slice(before).find((r) => r.method === "POST");
  assert.ok(request, "the turn called the model");
  return request;
}

describe("configuration precedence", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  const cases: Array<{ name: string; args?: string[]; env?: Record<string, string>; expected: string }> = [
    { name: "the config file sets the default model", expected: "file-model" },
    { name: "an environment variable wins over the file", env: { SWITCHYARD_MODEL: "env-model" }, expected: "env-model" },
    { name: "a flag wins over both", args: ["--model", "flag-model"], env: { SWITCHYARD_MODEL: "env-model" }, expected: "flag-model" },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const h = await startHarness({
        fake,
        dataDir: dataDirWith({ model: "file-model" }),
        ...(c.args ? { args: c.args } : {}),
        ...(c.env ? { env: c.env } : {}),
      });
      try {
        const threadId = await h.startThread();
        assert.equal((await oneTurn(h, threadId)).body.model, c.expected);
      } finally {
        await h.close();
      }
    });
  }

  it("per-thread and per-turn choices win over every default", async () => {
    const h = await startHarness({
      fake,
      dataDir: dataDirWith({ model: "file-model" }),
      args: ["--model", "flag-model"],
      env: { SWITCHYARD_MODEL: "env-model", ANTHROPIC_BASE_URL: fake.anthropicBaseURL, SWITCHYARD_PROVIDER: "openai-chat" },
    });
    try {
      const threadId = await h.startThread({ configuration: { model: "thread-model" } });
      assert.equal((await oneTurn(h, threadId)).body.model, "thread-model");
      assert.equal((await oneTurn(h, threadId, { model: "turn-model" })).body.model, "turn-model");
      await h.client.call("thread/config/update", { threadId, configuration: { model: "updated-model" } });
      const updated = await oneTurn(h, threadId);
      assert.equal(updated.body.model, "updated-model");
      assert.equal(updated.path, "/v1/chat/completions");

      // The provider too: this turn goes to the Anthropic endpoint, the thread's next one does not.
      const anthropic = await oneTurn(h, threadId, { provider: "anthropic", model: "claude-haiku-4-5" });
      assert.equal(anthropic.path, "/v1/messages");
      assert.equal(anthropic.body.model, "claude-haiku-4-5");
      assert.equal((await oneTurn(h, threadId)).path, "/v1/chat/completions");
      await h.client.call("thread/config/update", { threadId, configuration: { provider: "anthropic", model: "claude-sonnet-4-6" } });
      const configured = await oneTurn(h, threadId);
      assert.deepEqual([configured.path, configured.body.model], ["/v1/messages", "claude-sonnet-4-6"]);
    } finally {
      await h.close();
    }
  });

  it("takes provider keys and endpoints from the file, under the environment's", async () => {
    const config = { provider: "openai-chat", providers: { "openai-chat": { baseURL: fake.openaiBaseURL, apiKey: "file-key" } } };
    const noEnv = { OPENAI_BASE_URL: undefined, OPENAI_API_KEY: undefined };
    const fromFile = await startHarness({ fake, dataDir: dataDirWith(config), env: noEnv });
    try {
      const request = await oneTurn(fromFile, await fromFile.startThread());
      assert.equal(request.headers.authorization, "Bearer file-key");
    } finally {
      await fromFile.close();
    }
    const overridden = await startHarness({ fake, dataDir: dataDirWith(config), env: { ...noEnv, OPENAI_API_KEY: "env-key" } });
    try {
      const request = await oneTurn(overridden, await overridden.startThread());
      assert.equal(request.headers.authorization, "Bearer env-key");
    } finally {
      await overridden.close();
    }
  });

  it("detects the default provider on first use, not at start-up, and logs it", async () => {
    const h = await startHarness({ fake });
    try {
      assert.doesNotMatch(h.server.stderr, /auto-detected default/);
      await h.client.call("model/list", {});
      const line = await h.server.waitForLog((l) => l.msg === "no provider configured; using the auto-detected default");
      assert.equal(line.provider, "openai-chat");
    } finally {
      await h.close();
    }
  });
});

describe("an invalid config file", () => {
  const cases: Array<{ name: string; content: unknown; message: RegExp }> = [
    {
      name: "a wrong type",
      content: { providers: { anthropic: { apiKey: 42 } } },
      message: /config\.json: providers\.anthropic\.apiKey: expected string/,
    },
    { name: "an unknown setting", content: { modle: "gpt-4.1" }, message: /config\.json: modle: unknown setting/ },
    { name: "broken JSON", content: '{ "model": ', message: /config\.json: not valid JSON/ },
  ];
  for (const c of cases) {
    it(`stops app-server with a clear message: ${c.name}`, async () => {
      const server = ServerProcess.spawn({ dataDir: dataDirWith(c.content) });
      const { code } = await server.exited;
      assert.notEqual(code, 0);
      assert.match(server.stderr, c.message);
      assert.doesNotMatch(server.stderr, /^\s+at /m, "no stack trace");
    });
  }
});
