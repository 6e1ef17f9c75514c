// The acp backend on real ACP agents, offline: Switchyard's own `switchyard acp` (always
// available: it is the built CLI), and Zed's claude-agent-acp (test/agents, pinned) whose model
// calls go to the in-repo fake Anthropic server.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { CLI_PATH, tempDir } from "../support/server-process.js";
import { itemsOf, ModelScript, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

describe("acp backend on `switchyard acp` (a second Switchyard as the agent)", () => {
  let model: ModelScript;
  const agentData = tempDir("acp-agent-data");
  before(async () => {
    model = await ModelScript.start();
  });
  after(() => model.fake.close());

  const backend = () => ({
    type: "acp" as const,
    command: process.execPath,
    args: [CLI_PATH, "acp", "--provider", "openai-chat", "--model", "gpt-4o", "--data-dir", agentData],
    env: { OPENAI_BASE_URL: model.fake.openaiBaseURL, OPENAI_API_KEY: "test-key" },
  });

  it("runs a turn with an approved shell command (in the terminal Switchyard serves), then loads the session after a restart", async () => {
    const first: TypedHarness = await startTypedHarness({ model, onApproval: () => "accept" });
    let threadId: string;
    const command = "echo real-acp > real.txt && cat real.txt";
    try {
      model.enqueue(
        { kind: "response", text: "Running it.", toolCalls: [{ id: "call_real_1", name: "bash", arguments: { command } }] },
        { kind: "response", text: ["All ", "done."] },
      );
      threadId = await first.startThread({ configuration: { backend: backend() } });
      const end = await first.runTurn(threadId, "please run the command");
      assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
      const asked = first.approvals.filter((r) => r.threadId === threadId);
      assert.equal(asked.length, 1, "asked once: the agent's permission request covers the terminal it opens");
      assert.equal(asked[0]!.approvalType, "shell");
      assert.equal(asked[0]!.operation, command);
      assert.equal(fs.readFileSync(path.join(first.workspace, "real.txt"), "utf8"), "real-acp\n");
      const items = first.completedItems(threadId);
      assert.match(String(itemsOf(items, "commandExecution")[0]?.payload.output), /real-acp/);
      assert.equal(itemsOf(items, "commandExecution")[0]?.payload.exitCode, 0);
      assert.deepEqual(
        itemsOf(items, "agentMessage").map((i) => i.payload.text),
        ["Running it.", "All done."],
      );
    } finally {
      await first.close();
    }

    // A new Switchyard, a new agent process: the agent loads its session, with its history.
    const second = await startTypedHarness({ model, dataDir: first.dataDir });
    try {
      model.enqueue({ kind: "response", text: "I remember." });
      await second.client.request("thread/resume", { threadId });
      assert.equal((await second.runTurn(threadId, "do you remember?")).method, "turn/completed");
      assert.equal(itemsOf(second.completedItems(threadId), "systemNotice").length, 0, "no session was lost");
      const request = model.fake.requests.at(-1)!;
      assert.match(JSON.stringify(request.body), /please run the command/, "the agent's model saw the earlier turn");
    } finally {
      await second.close();
    }
    model.assertConsumed();
  });
});

const CLAUDE_ACP = fileURLToPath(new URL("../../../test/agents/node_modules/.bin/claude-agent-acp", import.meta.url));
const missing = fs.existsSync(CLAUDE_ACP) ? false : `claude-agent-acp is not installed (${CLAUDE_ACP}); npm test installs it`;

describe("acp backend on claude-agent-acp (real, offline)", { skip: missing }, () => {
  let h: TypedHarness;
  before(async () => {
    h = await startTypedHarness({ onApproval: () => "accept" });
  });
  after(() => h.close());

  it("runs a turn with an approved Bash call", async () => {
    const home = tempDir("claude-acp-home");
    const command = "echo real-claude-acp > real.txt && cat real.txt";
    h.model.enqueue(
      {
        kind: "response",
        text: "Running it.",
        toolCalls: [{ id: "toolu_acp_1", name: "Bash", arguments: { command, description: "Write a file" } }],
      },
      { kind: "response", text: ["All ", "done."] },
    );
    const threadId = await h.startThread({
      configuration: {
        backend: {
          type: "acp",
          command: CLAUDE_ACP,
          env: {
            ANTHROPIC_BASE_URL: h.fake.anthropicBaseURL,
            ANTHROPIC_API_KEY: "test-key",
            HOME: home,
            CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
            DISABLE_AUTOUPDATER: "1",
            // Run as root (CI is), Claude Code refuses the permission flags the adapter passes, unless sandboxed.
            IS_SANDBOX: "1",
          },
        },
      },
    });
    const end = await h.runTurn(threadId, "please run the command");
    assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
    assert.ok(
      h.approvals.some((r) => r.threadId === threadId && r.approvalType === "shell"),
      "the Bash call was asked for",
    );
    assert.equal(fs.readFileSync(path.join(h.workspace, "real.txt"), "utf8"), "real-claude-acp\n");
    assert.ok(itemsOf(h.completedItems(threadId), "agentMessage").some((i) => /done/.test(String(i.payload.text))));
  });
});
