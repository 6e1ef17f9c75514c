// The claude-code backend on the real Claude Code (test/agents, pinned), offline: its model
// calls go to the in-repo fake Anthropic server, its home and config to a temporary directory.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { tempDir } from "../support/server-process.js";
import { itemsOf, ModelScript, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

const CLAUDE = fileURLToPath(new URL("../../../test/agents/node_modules/.bin/claude", import.meta.url));
const missing = fs.existsSync(CLAUDE) ? false : `Claude Code is not installed (${CLAUDE}); npm test installs it`;

describe("claude-code backend (real Claude Code, offline)", { skip: missing }, () => {
  let h: TypedHarness;
  before(async () => {
    h = await startTypedHarness({ onApproval: () => "accept" });
  });
  after(() => h.close());

  function backend() {
    const home = tempDir("claude-home");
    return {
      type: "claude-code" as const,
      command: CLAUDE,
      env: {
        ANTHROPIC_BASE_URL: h.fake.anthropicBaseURL,
        ANTHROPIC_API_KEY: "test-key",
        HOME: home,
        CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      },
    };
  }

  it("runs a turn with reasoning, an approved Bash call and usage with cost", async () => {
    const command = "echo real-claude > real.txt && cat real.txt";
    h.model.enqueue(
      {
        kind: "response",
        reasoning: "I should run it.",
        text: "Running it.",
        toolCalls: [{ id: "toolu_real_1", name: "Bash", arguments: { command, description: "Write a file" } }],
      },
      { kind: "response", text: ["All ", "done."] },
    );
    const threadId = await h.startThread({ configuration: { backend: backend() } });
    const end = await h.runTurn(threadId, "please run the command");
    assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
    h.model.assertConsumed();

    const request = h.approvals.find((r) => r.threadId === threadId)!;
    assert.equal(request.approvalType, "shell");
    assert.equal(request.operation, command);
    assert.equal(fs.readFileSync(path.join(h.workspace, "real.txt"), "utf8"), "real-claude\n");

    const items = h.completedItems(threadId);
    assert.equal(itemsOf(items, "reasoningContent")[0]?.payload.text, "I should run it.");
    assert.deepEqual(
      itemsOf(items, "agentMessage").map((i) => i.payload.text),
      ["Running it.", "All done."],
    );
    assert.equal(
      h
        .notifications("item/agentMessage/delta", threadId)
        .map((d) => d.delta)
        .join(""),
      "Running it.All done.",
    );
    const command_ = itemsOf(items, "commandExecution")[0]!;
    assert.equal(command_.payload.command, command);
    assert.match(String(command_.payload.output), /real-claude/);
    assert.equal(itemsOf(items, "toolResult")[0]?.payload.success, true);

    const usage = end.params.turn.tokenUsage!;
    assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0, JSON.stringify(usage));
    assert.ok((usage.costUsd ?? 0) > 0, JSON.stringify(usage));
    // The model saw the command's output.
    const last = h.fake.requests.filter((r) => r.path === "/v1/messages").at(-1)!.body as { messages: Array<{ content: unknown }> };
    assert.match(JSON.stringify(last.messages.at(-1)), /real-claude/);
    const thread = (await h.client.readThread(threadId, false)).thread as { backendSession?: { backend: string; sessionId: string } };
    assert.equal(thread.backendSession?.backend, "claude-code");
    // Offline, with non-essential traffic off, Claude Code calls nothing but the streaming Messages API.
    assert.deepEqual(
      [...new Set(h.fake.requests.map((r) => `${r.method} ${r.path} stream=${String(r.body?.stream)}`))],
      ["POST /v1/messages stream=true"],
    );
  });

  it("interrupt cancels a streaming turn promptly and the same process serves the next turn", async () => {
    h.model.enqueue({ kind: "response", text: ["partial ", "answer"], holdOpen: true }, { kind: "response", text: "after the interrupt" });
    const threadId = await h.startThread({ configuration: { backend: backend() } });
    const turnId = await h.startTurn(threadId, "say something long");
    await h.notification("item/agentMessage/delta", (p) => p.threadId === threadId);
    const started = Date.now();
    await h.client.interrupt(threadId, turnId);
    const end = await h.client.turnEnd(turnId);
    assert.equal(end.method, "turn/cancelled");
    assert.ok(Date.now() - started < 4000, `cancelled after ${Date.now() - started} ms`);
    const next = await h.runTurn(threadId, "and now?");
    assert.equal(next.method, "turn/completed", JSON.stringify(next.params));
    h.model.assertConsumed();
    assert.equal(itemsOf(h.completedItems(threadId), "agentMessage").at(-1)?.payload.text, "after the interrupt");
  });
});

describe("claude-code backend across restarts (real Claude Code, offline)", { skip: missing }, () => {
  it("after a Switchyard restart the session is resumed (--resume), and a lost one is replaced with a notice", async () => {
    const model = await ModelScript.start();
    const home = tempDir("claude-home");
    const spec = {
      type: "claude-code" as const,
      command: CLAUDE,
      env: {
        ANTHROPIC_BASE_URL: model.fake.anthropicBaseURL,
        ANTHROPIC_API_KEY: "test-key",
        HOME: home,
        CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      },
    };
    const sessionOf = async (harness: TypedHarness, threadId: string) =>
      ((await harness.client.readThread(threadId, false)).thread as { backendSession?: { sessionId: string } }).backendSession?.sessionId;
    /** Runs one turn on a fresh server over the same data directory. */
    const turnAfterRestart = async (dataDir: string | undefined, threadId: string | undefined, text: string, answer: string) => {
      const harness = await startTypedHarness({ model, ...(dataDir ? { dataDir } : {}) });
      try {
        const id = threadId ?? (await harness.startThread({ configuration: { backend: spec } }));
        if (threadId) await harness.client.request("thread/resume", { threadId });
        model.enqueue({ kind: "response", text: answer });
        const end = await harness.runTurn(id, text);
        assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
        return { harness, threadId: id, items: harness.completedItems(id), sessionId: await sessionOf(harness, id) };
      } finally {
        await harness.close();
      }
    };
    try {
      const first = await turnAfterRestart(undefined, undefined, "remember: the word is kumquat", "first answer");
      assert.ok(first.sessionId);

      const second = await turnAfterRestart(first.harness.dataDir, first.threadId, "what was the word?", "second answer");
      // Claude Code sent its earlier conversation: the session was resumed.
      assert.match(JSON.stringify(model.fake.requests.at(-1)!.body.messages), /kumquat/);
      assert.equal(second.sessionId, first.sessionId);
      assert.equal(itemsOf(second.items, "systemNotice").length, 0);

      // Claude Code loses its transcripts: the next process cannot resume, and says so.
      fs.rmSync(path.join(home, ".claude", "projects"), { recursive: true, force: true });
      const third = await turnAfterRestart(first.harness.dataDir, first.threadId, "still there?", "third answer");
      const notice = itemsOf(third.items, "systemNotice")[0];
      assert.equal(notice?.payload.kind, "backendSessionLost");
      assert.match(String(notice?.payload.message), /No conversation found/);
      assert.doesNotMatch(JSON.stringify(model.fake.requests.at(-1)!.body.messages), /kumquat/);
      assert.ok(third.sessionId && third.sessionId !== first.sessionId);
      model.assertConsumed();
    } finally {
      await model.fake.close();
    }
  });
});
