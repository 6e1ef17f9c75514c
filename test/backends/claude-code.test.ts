// The claude-code backend end to end: the real CLI runs threads on a fake `claude -p` in
// stream-json mode (test/support/fake-claude-cli.ts), and these tests check what AppServer
// clients see and what the fake received.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { ApprovalDecision } from "../../src/client/index.js";
import { probe } from "../../src/backends/claude-code/index.js";
import type { FakeRecord, FakeScript } from "../support/fake-claude-cli.js";
import { tempDir } from "../support/server-process.js";
import { itemsOf, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

const FAKE_CLI = fileURLToPath(new URL("../support/fake-claude-cli.js", import.meta.url));

/** A directory scripting one fake agent (shared by every process a thread starts). */
function fakeAgent(script: FakeScript): {
  dir: string;
  backend: { type: "claude-code"; command: string; args: string[]; env: Record<string, string> };
} {
  const dir = tempDir("fake-claude");
  fs.writeFileSync(path.join(dir, "script.json"), JSON.stringify(script));
  return { dir, backend: { type: "claude-code", command: process.execPath, args: [FAKE_CLI], env: { FAKE_CLAUDE_DIR: dir } } };
}

function records(dir: string): FakeRecord[] {
  const file = path.join(dir, "record.jsonl");
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as FakeRecord);
}

function starts(dir: string): Array<Extract<FakeRecord, { event: "start" }>> {
  return records(dir).filter((r): r is Extract<FakeRecord, { event: "start" }> => r.event === "start");
}

function permissionAnswers(dir: string): Array<Record<string, unknown>> {
  return records(dir)
    .filter((r): r is Extract<FakeRecord, { event: "control_response" }> => r.event === "control_response")
    .map((r) => r.response.response as Record<string, unknown>);
}

describe("claude-code backend (fake CLI)", () => {
  let h: TypedHarness;
  let decision: ApprovalDecision = "accept";
  before(async () => {
    h = await startTypedHarness({ onApproval: () => decision });
  });
  after(() => h.close());

  it("streams text and reasoning, records the session, reports usage with cost per turn, and reuses the process", async () => {
    const agent = fakeAgent({
      turns: [
        {
          steps: [{ thinking: ["Let me ", "think."] }, { text: ["Hello ", "from ", "Claude"] }],
          usage: { input: 100, output: 20, cacheRead: 50, cacheWrite: 5 },
          cost: 0.25,
        },
        { steps: [{ text: "Second" }], usage: { input: 10, output: 2 }, cost: 0.5 },
      ],
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "hi");
    assert.equal(end.method, "turn/completed");
    assert.equal(
      h
        .notifications("item/agentMessage/delta", threadId)
        .map((d) => d.delta)
        .join(""),
      "Hello from Claude",
    );
    assert.equal(
      h
        .notifications("item/reasoning/delta", threadId)
        .map((d) => d.delta)
        .join(""),
      "Let me think.",
    );
    const items = h.completedItems(threadId);
    assert.deepEqual(
      itemsOf(items, "userMessage").map((i) => i.payload.text),
      ["hi"],
    );
    assert.deepEqual(
      itemsOf(items, "agentMessage").map((i) => i.payload.text),
      ["Hello from Claude"],
    );
    const reasoning = itemsOf(items, "reasoningContent");
    assert.equal(reasoning.length, 1);
    assert.equal(reasoning[0]!.payload.text, "Let me think.");
    assert.equal(reasoning[0]!.payload.signature, "sig-fake");
    assert.deepEqual(end.params.turn.tokenUsage, {
      inputTokens: 155,
      outputTokens: 20,
      totalTokens: 175,
      cachedInputTokens: 50,
      costUsd: 0.25,
    });
    // The fake got the user message as stream-json content.
    const users = records(agent.dir).filter((r) => r.event === "user");
    assert.deepEqual((users[0] as { message: { message: unknown } }).message.message, {
      role: "user",
      content: [{ type: "text", text: "hi" }],
    });

    const second = await h.runTurn(threadId, "again");
    assert.equal(second.method, "turn/completed");
    // The session's running total grew to 0.75; the turn's cost is the growth.
    assert.equal(second.params.turn.tokenUsage?.costUsd, 0.5);
    assert.equal(starts(agent.dir).length, 1, "one process served both turns");
    const [start] = starts(agent.dir);
    assert.equal(start!.resume, null);
    assert.equal(start!.cwd, h.workspace);
    const thread = (await h.client.readThread(threadId, false)).thread as { backendSession?: { backend: string; sessionId: string } };
    assert.equal(thread.backendSession?.backend, "claude-code");
    assert.match(thread.backendSession?.sessionId ?? "", /^[0-9a-f-]{36}$/);
  });

  it("a shell command: approval accepted, toolCall, commandExecution with its output, toolResult", async () => {
    decision = "accept";
    const input = { command: "echo hello-from-fake > out.txt; cat out.txt", description: "write a file" };
    const agent = fakeAgent({ turns: [{ steps: [{ tool: { id: "toolu_bash", name: "Bash", input, ask: true } }, { text: "done" }] }] });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "run it")).method, "turn/completed");

    const request = h.approvals.find((r) => r.threadId === threadId)!;
    assert.equal(request.approvalType, "shell");
    assert.equal(request.operation, input.command);
    assert.equal(request.target, h.workspace);
    assert.deepEqual(permissionAnswers(agent.dir), [{ behavior: "allow", updatedInput: input }]);

    const items = h.completedItems(threadId);
    const call = itemsOf(items, "toolCall")[0]!;
    assert.equal(call.payload.callId, "toolu_bash");
    assert.equal(call.payload.toolName, "Bash");
    assert.deepEqual(call.payload.arguments, input);
    assert.equal(
      h
        .notifications("item/toolCall/argumentsDelta", threadId)
        .map((d) => d.delta)
        .join(""),
      JSON.stringify(input),
    );
    const command = itemsOf(items, "commandExecution")[0]!;
    assert.equal(command.payload.command, input.command);
    assert.equal(command.payload.exitCode, 0);
    assert.match(String(command.payload.output), /hello-from-fake/);
    assert.match(
      h
        .notifications("item/commandExecution/outputDelta", threadId)
        .map((d) => d.delta)
        .join(""),
      /hello-from-fake/,
    );
    const result = itemsOf(items, "toolResult")[0]!;
    assert.equal(result.payload.success, true);
    assert.match(String(result.payload.output), /hello-from-fake/);
    assert.ok(fs.existsSync(path.join(h.workspace, "out.txt")));
    // Items come in the order things happened.
    const order = items.map((i) => i.type).filter((t) => t !== "approvalResponse" && t !== "approvalRequest");
    assert.deepEqual(order, ["userMessage", "toolCall", "commandExecution", "toolResult", "agentMessage"]);
  });

  it("a declined approval: the agent is told, nothing runs, the turn goes on", async () => {
    decision = "decline";
    const agent = fakeAgent({
      turns: [
        {
          steps: [
            { tool: { id: "toolu_no", name: "Bash", input: { command: "touch declined.txt" }, ask: true } },
            { text: "ok, not doing it" },
          ],
        },
      ],
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "run it")).method, "turn/completed");
    const [answer] = permissionAnswers(agent.dir);
    assert.equal(answer!.behavior, "deny");
    assert.match(String(answer!.message), /declined/);
    assert.equal(answer!.interrupt, undefined);
    assert.equal(fs.existsSync(path.join(h.workspace, "declined.txt")), false);
    const items = h.completedItems(threadId);
    assert.equal(itemsOf(items, "commandExecution").length, 0);
    assert.equal(itemsOf(items, "toolResult")[0]!.payload.success, false);
    assert.equal(itemsOf(items, "agentMessage")[0]!.payload.text, "ok, not doing it");
  });

  it("a cancelled approval denies with interrupt and cancels the turn", async () => {
    decision = "cancel";
    const agent = fakeAgent({
      turns: [
        { steps: [{ tool: { id: "toolu_c", name: "Bash", input: { command: "touch cancelled.txt" }, ask: true } }, { text: "never" }] },
      ],
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "run it");
    assert.equal(end.method, "turn/cancelled");
    assert.equal((end.params as { reason: string }).reason, "approvalCancelled");
    const [answer] = permissionAnswers(agent.dir);
    assert.equal(answer!.behavior, "deny");
    assert.equal(answer!.interrupt, true);
    assert.equal(fs.existsSync(path.join(h.workspace, "cancelled.txt")), false);
    assert.equal(itemsOf(h.completedItems(threadId), "agentMessage").length, 0);
  });

  it("file edits: a file approval, fileChange items with unified diffs, and the turn's diff", async () => {
    decision = "accept";
    const file = path.join(h.workspace, "notes.txt");
    const agent = fakeAgent({
      turns: [
        {
          steps: [
            { tool: { id: "toolu_w", name: "Write", input: { file_path: file, content: "hello\nworld\n" }, ask: true } },
            { tool: { id: "toolu_e", name: "Edit", input: { file_path: file, old_string: "world", new_string: "there" }, ask: true } },
            {
              tool: {
                id: "toolu_t",
                name: "TodoWrite",
                input: {
                  todos: [
                    { content: "write notes", status: "completed", activeForm: "Writing" },
                    { content: "review", status: "pending", activeForm: "Reviewing" },
                  ],
                },
              },
            },
          ],
        },
      ],
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "write notes")).method, "turn/completed");
    const requests = h.approvals.filter((r) => r.threadId === threadId);
    assert.deepEqual(
      requests.map((r) => [r.approvalType, r.operation, r.target]),
      [
        ["file", "write notes.txt", file],
        ["file", "edit notes.txt", file],
      ],
    );
    const changes = itemsOf(h.completedItems(threadId), "fileChange");
    assert.deepEqual(
      changes.map((c) => [c.payload.path, c.payload.kind]),
      [
        ["notes.txt", "add"],
        ["notes.txt", "update"],
      ],
    );
    assert.match(String(changes[0]!.payload.diff), /^\+hello$/m);
    assert.match(String(changes[1]!.payload.diff), /^-world$\n^\+there$/m);
    const diff = h.notifications("turn/diff/updated", threadId).at(-1)!.diff;
    assert.match(diff, /new file mode/);
    assert.match(diff, /^\+there$/m);
    assert.doesNotMatch(diff, /^\+world$/m);
    const plan = h.notifications("plan/updated", threadId).at(-1)!.plan;
    assert.deepEqual(plan.steps, [
      { step: "write notes", status: "completed" },
      { step: "review", status: "pending" },
    ]);
  });

  it("an agent error result fails the turn with backendError", async () => {
    const agent = fakeAgent({ turns: [{ steps: [], error: "API Error: 529 overloaded" }] });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "hi");
    assert.equal(end.method, "turn/failed");
    const { error } = end.params as { error: { code: string; message: string } };
    assert.equal(error.code, "backendError");
    assert.match(error.message, /529 overloaded/);
  });

  it("interrupt: the agent is told and the turn is cancelled promptly; the process stays", async () => {
    const agent = fakeAgent({ turns: [{ steps: [{ text: "working" }, { hang: {} }] }, { steps: [{ text: "after" }] }] });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const turnId = await h.startTurn(threadId, "long job");
    await h.notification("item/completed", (p) => p.threadId === threadId && p.item.type === "agentMessage");
    const started = Date.now();
    await h.client.interrupt(threadId, turnId);
    const end = await h.client.turnEnd(turnId);
    assert.equal(end.method, "turn/cancelled");
    assert.ok(Date.now() - started < 3000, `cancelled after ${Date.now() - started} ms`);
    assert.ok(records(agent.dir).some((r) => r.event === "interrupt"));
    assert.equal((await h.runTurn(threadId, "next")).method, "turn/completed");
    assert.equal(starts(agent.dir).length, 1);
  });

  it("an agent that ignores the interrupt is killed after the grace period; the next turn resumes its session", async () => {
    const agent = fakeAgent({
      turns: [{ steps: [{ text: "stuck" }, { hang: { ignoreInterrupt: true } }] }, { steps: [{ text: "resumed" }] }],
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const turnId = await h.startTurn(threadId, "hang");
    await h.notification("item/completed", (p) => p.threadId === threadId && p.item.type === "agentMessage");
    const started = Date.now();
    await h.client.interrupt(threadId, turnId);
    assert.equal((await h.client.turnEnd(turnId)).method, "turn/cancelled");
    const waited = Date.now() - started;
    assert.ok(waited >= 4500 && waited < 9000, `cancelled after ${waited} ms`);
    assert.equal((await h.runTurn(threadId, "again")).method, "turn/completed");
    const [first, second] = starts(agent.dir);
    const session = ((await h.client.readThread(threadId, false)).thread as { backendSession?: { sessionId: string } }).backendSession;
    assert.equal(first!.resume, null);
    assert.equal(second?.resume, session?.sessionId);
    assert.notEqual(first!.pid, second!.pid);
  });

  it("a crash mid-turn fails the turn with backendExited, the exit code and stderr", async () => {
    const agent = fakeAgent({ turns: [{ steps: [{ text: "about to fail" }, { crash: { code: 3, stderr: "fatal: out of cheese\n" } }] }] });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "hi");
    assert.equal(end.method, "turn/failed");
    const { error } = end.params as { error: { code: string; message: string } };
    assert.equal(error.code, "backendExited");
    assert.match(error.message, /code 3/);
    assert.match(error.message, /out of cheese/);
    const items = h.completedItems(threadId);
    assert.equal(itemsOf(items, "agentMessage")[0]!.payload.text, "about to fail");
    assert.equal(itemsOf(items, "error")[0]!.payload.code, "backendExited");
  });

  it("a missing binary fails the turn with backendNotFound", async () => {
    const threadId = await h.startThread({
      configuration: { backend: { type: "claude-code", command: path.join(h.workspace, "no-such-claude") } },
    });
    const end = await h.runTurn(threadId, "hi");
    assert.equal(end.method, "turn/failed");
    const { error } = end.params as { error: { code: string; message: string } };
    assert.equal(error.code, "backendNotFound");
    assert.match(error.message, /no-such-claude/);
  });
});

describe("claude-code backend across restarts", () => {
  it("after a restart the next turn spawns with --resume <session id>; a session the agent lost is said and replaced", async () => {
    const agent = fakeAgent({ turns: [{ steps: [{ text: "one" }] }, { steps: [{ text: "two" }] }, { steps: [{ text: "three" }] }] });
    const first = await startTypedHarness();
    let threadId: string;
    let sessionId: string;
    try {
      threadId = await first.startThread({ configuration: { backend: agent.backend } });
      assert.equal((await first.runTurn(threadId, "first")).method, "turn/completed");
      sessionId = ((await first.client.readThread(threadId, false)).thread as { backendSession?: { sessionId: string } }).backendSession!
        .sessionId;
    } finally {
      await first.close();
    }
    const second = await startTypedHarness({ model: first.model, dataDir: first.dataDir });
    try {
      await second.client.request("thread/resume", { threadId });
      assert.equal((await second.runTurn(threadId, "second")).method, "turn/completed");
      assert.deepEqual(
        starts(agent.dir).map((s) => s.resume),
        [null, sessionId],
      );
      assert.equal(itemsOf(second.completedItems(threadId), "agentMessage")[0]!.payload.text, "two");
      assert.equal(itemsOf(second.completedItems(threadId), "systemNotice").length, 0);
    } finally {
      await second.close();
    }
    // The agent forgets the session: the next start cannot resume it.
    fs.rmSync(path.join(agent.dir, "sessions", sessionId));
    const third = await startTypedHarness({ model: first.model, dataDir: first.dataDir });
    try {
      await third.client.request("thread/resume", { threadId });
      assert.equal((await third.runTurn(threadId, "third")).method, "turn/completed");
      const items = third.completedItems(threadId);
      const notice = itemsOf(items, "systemNotice")[0]!;
      assert.equal(notice.payload.kind, "backendSessionLost");
      assert.match(String(notice.payload.message), new RegExp(sessionId));
      assert.equal(itemsOf(items, "agentMessage")[0]!.payload.text, "three");
      const resumes = starts(agent.dir).map((s) => s.resume);
      assert.deepEqual(resumes, [null, sessionId, sessionId, null]);
      const newSession = ((await third.client.readThread(threadId, false)).thread as { backendSession?: { sessionId: string } })
        .backendSession!.sessionId;
      assert.notEqual(newSession, sessionId);
    } finally {
      await third.close();
      await first.model.fake.close();
    }
  });
});

describe("claude-code probe", () => {
  const deps = { log: undefined as never, env: process.env, agentRegistryDir: tempDir("agents"), idleTimeoutMs: 1000 };
  it("reports the version of a runnable command", async () => {
    const found = await probe({ type: "claude-code", command: process.execPath, args: [FAKE_CLI] }, deps);
    assert.equal(found.available, true);
    assert.equal(found.version, "2.1.331");
    assert.ok(found.features.includes("approvals"));
  });
  it("reports a missing command as unavailable", async () => {
    const missing = await probe({ type: "claude-code", command: "/nonexistent/claude" }, deps);
    assert.equal(missing.available, false);
    assert.match(missing.problem ?? "", /not found/);
  });
});
