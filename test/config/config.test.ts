// The configuration file, provider settings from it, the model catalog and usage arithmetic.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { chooseProviderAndModel, resolveServerConfig, type AppServerFlags } from "../../src/cli/config.js";
import { ConfigFileError, loadConfigFile } from "../../src/config/file.js";
import { configuredProviders, providerEnv } from "../../src/config/providers.js";
import { silentLogger } from "../../src/log.js";
import { ModelCatalog } from "../../src/providers/model-catalog.js";
import type { ModelListing } from "../../src/providers/model-listing.js";
import { addUsage, callUsage } from "../../src/providers/usage.js";
import { knownModels, lookupModel } from "../../src/providers/catalog.js";
import { tempDir } from "../support/server-process.js";

function withConfig(content: unknown): string {
  const dir = tempDir("cfg");
  fs.writeFileSync(path.join(dir, "config.json"), typeof content === "string" ? content : JSON.stringify(content));
  return dir;
}

const FLAGS: AppServerFlags = {
  listen: ["stdio://"],
  maxMessageBytes: 1024,
  maxInFlight: 4,
  pingIntervalMs: 1000,
  outputBudgetBytes: 1 << 20,
  stallTimeoutMs: 60_000,
};

describe("config file", () => {
  it("is optional", async () => {
    const loaded = await loadConfigFile(tempDir("cfg"));
    assert.deepEqual([loaded.exists, loaded.config], [false, {}]);
  });

  it("names the file and the JSON path of every problem", async () => {
    const dir = withConfig({ providers: { anthropic: { apiKey: 1, thinkingBudgetTokens: 10 } }, allowedHosts: ["a", 2], extra: true });
    await assert.rejects(
      () => loadConfigFile(dir),
      (error: unknown) => {
        assert.ok(error instanceof ConfigFileError);
        const file = path.join(dir, "config.json");
        assert.deepEqual(error.message.split("\n").sort(), [
          `${file}: allowedHosts[1]: expected string`,
          `${file}: extra: unknown setting`,
          `${file}: providers.anthropic.apiKey: expected string`,
          `${file}: providers.anthropic.thinkingBudgetTokens: expected at least 1024`,
        ]);
        return true;
      },
    );
    await assert.rejects(() => loadConfigFile(withConfig("[1]")), /config\.json: \(top level\): expected a JSON object/);
  });

  it("sits under flags and environment variables, above built-in defaults", async () => {
    const dir = withConfig({ provider: "anthropic", model: "m-file", approvalTimeoutMs: 1234, allowedOrigins: ["https://app"] });
    const fromFile = await resolveServerConfig({ ...FLAGS, dataDir: dir }, {});
    assert.deepEqual(
      [fromFile.provider, fromFile.model, fromFile.approvalTimeoutMs, fromFile.commandTimeoutMs],
      ["anthropic", "m-file", 1234, 600_000],
    );
    assert.deepEqual(fromFile.allowedOrigins, ["https://app"]);
    const fromEnv = await resolveServerConfig({ ...FLAGS, dataDir: dir }, { SWITCHYARD_PROVIDER: "openai", SWITCHYARD_MODEL: "m-env" });
    assert.deepEqual([fromEnv.provider, fromEnv.model], ["openai", "m-env"]);
    const fromFlags = await resolveServerConfig(
      { ...FLAGS, dataDir: dir, provider: "ollama", approvalTimeoutMs: 99, allowOrigin: [] },
      { SWITCHYARD_PROVIDER: "openai" },
    );
    assert.deepEqual(
      [fromFlags.provider, fromFlags.model, fromFlags.approvalTimeoutMs, fromFlags.allowedOrigins],
      ["ollama", "m-file", 99, []],
    );

    const chosen = chooseProviderAndModel({ model: "m-flag" }, { SWITCHYARD_PROVIDER: "openai" }, await loadConfigFile(dir));
    assert.deepEqual(chosen.provider, { value: "openai", source: "environment", origin: "SWITCHYARD_PROVIDER" });
    assert.deepEqual(chosen.model, { value: "m-flag", source: "flag", origin: "--model" });
  });
});

describe("provider settings", () => {
  const settings = {
    openai: { apiKey: "k-openai" },
    "openai-chat": { apiKey: "k-chat", baseURL: "http://local/v1" },
    anthropic: { apiKey: "k-ant", thinkingBudgetTokens: 2048 },
    ollama: { host: "box:11434" },
  };

  it("become the variables the providers read, the environment winning", () => {
    const env = providerEnv({ ANTHROPIC_API_KEY: "k-env", OPENAI_BASE_URL: "" }, settings, "openai");
    assert.equal(env.ANTHROPIC_API_KEY, "k-env");
    assert.equal(env.SWITCHYARD_ANTHROPIC_THINKING_BUDGET_TOKENS, "2048");
    assert.equal(env.OLLAMA_HOST, "box:11434");
    // An empty variable is unset; the "openai" section is preferred for provider openai.
    assert.deepEqual([env.OPENAI_API_KEY, env.OPENAI_BASE_URL], ["k-openai", "http://local/v1"]);
    const chat = providerEnv({}, settings, "openai-chat");
    assert.deepEqual([chat.OPENAI_API_KEY, chat.OPENAI_BASE_URL], ["k-chat", "http://local/v1"]);
  });

  it("decide which providers the catalog lists", () => {
    assert.deepEqual(configuredProviders({}, settings, "anthropic"), ["anthropic", "openai-chat", "ollama"]);
    assert.deepEqual(configuredProviders({ OPENAI_API_KEY: "k" }, undefined, undefined), ["openai"]);
    assert.deepEqual(configuredProviders({}, undefined, "ollama"), ["ollama"]);
  });
});

describe("model catalog", () => {
  function catalog(listLive: (provider: string) => Promise<ModelListing | undefined>, ttlMs?: number) {
    let calls = 0;
    const models = new ModelCatalog({
      providers: ["anthropic", "ollama"],
      // Anthropic's endpoint is api.anthropic.com; Ollama's is on loopback.
      envFor: (provider) => (provider === "anthropic" ? { ANTHROPIC_API_KEY: "k" } : {}),
      default: { provider: "ollama", model: "qwen3:8b" },
      log: silentLogger,
      ...(ttlMs !== undefined ? { ttlMs } : {}),
      listLive: (provider) => {
        calls++;
        return listLive(provider);
      },
    });
    return { models, calls: () => calls };
  }

  it("merges live listings over the built-in entries and marks the default", async () => {
    const { models } = catalog(async (provider) =>
      provider === "anthropic"
        ? { ok: true, url: "u", models: [{ id: "claude-sonnet-4-5-20250929", displayName: "Claude Sonnet 4.5" }, { id: "claude-new" }] }
        : { ok: true, url: "u", models: [{ id: "llama3.2:latest" }] },
    );
    const list = await models.list();
    const snapshot = list.find((m) => m.id === "claude-sonnet-4-5-20250929");
    assert.equal(snapshot?.pricing?.inputPerMTok, 3, "a dated snapshot inherits its alias's facts");
    assert.deepEqual(
      list.find((m) => m.id === "claude-new"),
      { id: "claude-new", provider: "anthropic", reasoning: false, isDefault: false },
    );
    assert.ok(
      list.some((m) => m.id === "claude-opus-4-6"),
      "built-in entries stay",
    );
    assert.deepEqual(
      list.filter((m) => m.provider === "ollama").map((m) => [m.id, m.isDefault]),
      [
        ["llama3.2:latest", false],
        ["qwen3:8b", true],
      ],
    );
  });

  it("asks no endpoint on another machine when told not to: the built-in entries, then the listing once one was fetched", async () => {
    const asked: string[] = [];
    const { models } = catalog(async (provider) => {
      asked.push(provider);
      return { ok: true, url: "u", models: [{ id: provider === "anthropic" ? "claude-listed" : "llama3.2:latest" }] };
    });
    const atHand = await models.list({ askRemote: false });
    assert.deepEqual(asked, ["ollama"], "the local Ollama is asked, api.anthropic.com is not");
    assert.deepEqual(
      atHand.filter((m) => m.provider === "anthropic").map((m) => m.id),
      knownModels("anthropic").map((m) => m.id),
    );
    assert.ok(atHand.some((m) => m.id === "llama3.2:latest"));
    assert.ok((await models.list()).some((m) => m.id === "claude-listed"));
    assert.deepEqual(asked, ["ollama", "anthropic"]);
    assert.ok(
      (await models.list({ askRemote: false })).some((m) => m.id === "claude-listed"),
      "the fetched listing",
    );
    assert.deepEqual(asked, ["ollama", "anthropic"]);
  });

  it("falls back to the built-in entries when a listing fails, and caches", async () => {
    const { models, calls } = catalog(async () => ({ ok: false, problem: "nothing answers" }));
    const first = await models.list();
    assert.ok(first.some((m) => m.id === "claude-haiku-4-5"));
    await models.list();
    assert.equal(calls(), 2, "one listing per provider within the minute");
    const expired = catalog(async () => {
      throw new Error("boom");
    }, 0);
    await expired.models.list();
    await expired.models.list();
    assert.equal(expired.calls(), 4);
  });
});

describe("usage", () => {
  it("prices each call and sums exactly, dropping the cost when part is unpriced", () => {
    const gpt = lookupModel("openai-chat", "gpt-4.1");
    const a = callUsage({ inputTokens: 1000, outputTokens: 200, cachedInputTokens: 400 }, gpt);
    assert.deepEqual(a, { inputTokens: 1000, outputTokens: 200, totalTokens: 1200, cachedInputTokens: 400, costUsd: 0.003 });
    const b = callUsage({ inputTokens: 100, outputTokens: 10 }, gpt);
    assert.equal(addUsage(a, b).costUsd, 0.00328); // 0.003 + (100x2 + 10x8) / 1e6
    const unpriced = callUsage({ inputTokens: 5, outputTokens: 5, reasoningTokens: 2 }, undefined);
    assert.deepEqual(addUsage(a, unpriced), {
      inputTokens: 1005,
      outputTokens: 205,
      totalTokens: 1210,
      cachedInputTokens: 400,
      reasoningTokens: 2,
    });
  });
});
