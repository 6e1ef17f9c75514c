// The real Codex (test/agents' @openai/codex), offline: CODEX_HOME is a temporary directory whose
// config.toml points codex at the in-repo fake model server (OpenAI Responses API), so one turn
// runs a shell command the fake model asks for, approved through Switchyard.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { tempDir } from "../support/server-process.js";
import { itemsOf, ModelScript, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

const CODEX = fileURLToPath(new URL("../../../test/agents/node_modules/.bin/codex", import.meta.url));
const missing = fs.existsSync(CODEX) ? false : `the Codex CLI is not installed (${CODEX}); run npm test, which installs test/agents`;

/** A CODEX_HOME whose only model provider is the fake model server. */
function offlineCodexHome(baseURL: string): string {
  const home = tempDir("codex-home");
  fs.writeFileSync(
    path.join(home, "config.toml"),
    [
      'model = "fake-model"',
      'model_provider = "switchyard-fake"',
      "",
      "[model_providers.switchyard-fake]",
      'name = "Switchyard fake model server"',
      `base_url = "${baseURL}"`,
      'wire_api = "responses"',
      'env_key = "SWITCHYARD_FAKE_MODEL_KEY"',
      "",
    ].join("\n"),
  );
  return home;
}

describe("codex backend with the real Codex, offline", { skip: missing }, () => {
  let model: ModelScript;
  let h: TypedHarness;
  before(async () => {
    model = await ModelScript.start();
    h = await startTypedHarness({ model, onApproval: () => "accept" });
  });
  after(async () => {
    await h?.close();
    await model?.fake.close();
  });

  it("runs a shell command the model asks for, approved through Switchyard", async () => {
    const home = offlineCodexHome(model.fake.openaiBaseURL);
    const command = "echo real-codex > proof.txt; cat proof.txt";
    // Codex's shell tool (0.169.0, fallback model metadata) is exec_command {cmd}.
    model.enqueue({
      kind: "response",
      reasoning: "I will run it.",
      toolCalls: [{ id: "call_real_1", name: "exec_command", arguments: { cmd: command } }],
    });
    model.enqueue({ kind: "response", text: "All done." });
    const threadId = await h.startThread({
      configuration: { backend: { type: "codex", command: CODEX, env: { CODEX_HOME: home, SWITCHYARD_FAKE_MODEL_KEY: "dummy-key" } } },
    });
    const end = await h.client.turnEnd(await h.startTurn(threadId, "make a proof file"), 60_000);
    assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
    model.assertConsumed();

    const request = h.approvals.find((r) => r.threadId === threadId);
    assert.ok(request, "codex asked for approval through Switchyard");
    assert.equal(request.approvalType, "shell");
    assert.match(request.operation, /echo real-codex > proof\.txt/);
    assert.equal(request.target, h.workspace);
    assert.equal(fs.readFileSync(path.join(h.workspace, "proof.txt"), "utf8"), "real-codex\n");

    const items = h.completedItems(threadId);
    const commandItem = itemsOf(items, "commandExecution")[0];
    assert.ok(commandItem);
    assert.match(String(commandItem.payload.output), /real-codex/);
    assert.equal(commandItem.payload.exitCode, 0);
    assert.deepEqual(
      itemsOf(items, "agentMessage").map((i) => i.payload.text),
      ["All done."],
    );
    assert.ok(itemsOf(items, "reasoningContent").some((i) => i.payload.text === "I will run it."));
    assert.ok(h.notifications("item/usage/delta", threadId).length >= 1, "usage reported");

    // What codex sent the model: the Responses API, streaming, with the command's output fed back.
    const calls = model.fake.requests.filter((r) => r.path === "/v1/responses");
    assert.equal(calls.length, 2);
    assert.equal(calls[0]!.body.stream, true);
    assert.equal(calls[0]!.headers.authorization, "Bearer dummy-key");
    const output = (calls[1]!.body.input as Array<{ type: string; call_id?: string; output?: string }>).find(
      (i) => i.type === "function_call_output" && i.call_id === "call_real_1",
    );
    assert.match(String(output?.output), /real-codex/);
  });
});
