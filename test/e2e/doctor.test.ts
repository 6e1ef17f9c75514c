// `switchyard doctor` end to end: the built CLI against the fake model server, a server that
// rejects the key, a port where nothing listens, and broken configuration.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { openStore } from "../../src/store/sqlite-store.js";
import { FakeModelServer } from "../support/fake-model-server.js";
import { CLI_PATH, tempDir } from "../support/server-process.js";

interface DoctorRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `switchyard doctor` asynchronously (the fake server answers from this process). */
function doctor(args: string[], env: Record<string, string> = {}, dataDir = tempDir("doctor")): Promise<DoctorRun> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI|ANTHROPIC|OLLAMA|SWITCHYARD)_/.test(name)) clean[name] = value;
  }
  const child = spawn(process.execPath, [CLI_PATH, "doctor", "--data-dir", dataDir, ...args], {
    env: { ...clean, OLLAMA_HOST: "127.0.0.1:1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

describe("switchyard doctor", () => {
  let fake: FakeModelServer;
  let openai: Record<string, string>;
  before(async () => {
    fake = await FakeModelServer.start();
    openai = { OPENAI_BASE_URL: fake.openaiBaseURL, OPENAI_API_KEY: "test-key" };
  });
  after(() => fake.close());

  it("explains the choice and passes when everything works", async () => {
    const dataDir = tempDir("doctor");
    await openStore(dataDir).close();
    const run = await doctor([], openai, dataDir);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /provider\s+openai-chat \(auto-detected/);
    assert.match(run.stdout, /model\s+gpt-4\.1 \(the provider's default\)/);
    assert.match(run.stdout, /OK\s+data dir\s+.* is writable/);
    assert.match(run.stdout, /OK\s+disk space\s+.*(MiB|GiB) free/);
    assert.match(run.stdout, /OK\s+database\s+.*switchyard\.db opens \(0 threads\)/);
    assert.match(run.stdout, /OK\s+live check\s+.*\/v1\/models answered and offers gpt-4\.1/);
    assert.match(run.stdout, /Everything looks fine\./);
  });

  it("names the flag, variable or config file that chose provider and model", async () => {
    const dataDir = tempDir("doctor");
    fs.writeFileSync(path.join(dataDir, "config.json"), JSON.stringify({ model: "gpt-4.1-mini" }));
    const run = await doctor(["--provider", "openai-chat"], openai, dataDir);
    assert.equal(run.code, 0, run.stdout);
    assert.match(run.stdout, /openai-chat \(from the --provider flag\)/);
    assert.match(run.stdout, /gpt-4\.1-mini \(from .*config\.json\)/);

    const anthropic = await doctor([], {
      ANTHROPIC_BASE_URL: fake.anthropicBaseURL,
      ANTHROPIC_API_KEY: "k",
      SWITCHYARD_MODEL: "claude-sonnet-4-6",
    });
    assert.equal(anthropic.code, 0, anthropic.stdout);
    assert.match(anthropic.stdout, /claude-sonnet-4-6 \(from the SWITCHYARD_MODEL environment variable\)/);
    assert.match(anthropic.stdout, /OK\s+live check/);
  });

  it("says the API key was rejected on 401", async () => {
    const rejecting = http.createServer((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }));
    });
    await new Promise<void>((resolve) => rejecting.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = rejecting.address() as AddressInfo;
      const run = await doctor([], { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: "wrong" });
      assert.equal(run.code, 1);
      assert.match(run.stdout, /FAIL\s+live check\s+the API key was rejected \(HTTP 401/);
    } finally {
      await new Promise((resolve) => rejecting.close(resolve));
    }
  });

  it("says when nothing answers", async () => {
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const run = await doctor([], { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: "k" });
    assert.equal(run.code, 1);
    assert.match(run.stdout, new RegExp(`nothing answers at http://127\\.0\\.0\\.1:${port}`));
  });

  it("says when the model is not offered, and what is", async () => {
    const run = await doctor(["--model", "gpt-9"], openai);
    assert.equal(run.code, 1);
    assert.match(run.stdout, /model gpt-9 is not offered by this provider; available: gpt-4\.1, gpt-4\.1-mini/);
  });

  it("says when the key is missing", async () => {
    const run = await doctor(["--provider", "anthropic"]);
    assert.equal(run.code, 1);
    assert.match(run.stdout, /FAIL\s+provider\s+.*needs ANTHROPIC_API_KEY/);
  });

  it("reports an invalid config file with its JSON path", async () => {
    const dataDir = tempDir("doctor");
    fs.writeFileSync(path.join(dataDir, "config.json"), JSON.stringify({ providers: { anthropic: { apiKey: 42 } } }));
    const run = await doctor([], openai, dataDir);
    assert.equal(run.code, 1);
    assert.match(run.stdout, /FAIL\s+config file\s+.*config\.json: providers\.anthropic\.apiKey: expected string/);
    assert.doesNotMatch(run.stdout + run.stderr, /^\s+at /m);
  });
});
