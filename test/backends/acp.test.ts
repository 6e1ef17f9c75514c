// The acp backend end to end: the built CLI runs threads configured with
// `backend: {type: "acp", command}` on a scripted ACP agent written with the official SDK, and
// the tests check what an AppServer client sees, what reached the disk, and what the agent got.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { ApprovalDecision } from "../../src/client/index.js";
import type { BackendDeps } from "../../src/backends/backend.js";
import { probe } from "../../src/backends/acp/index.js";
import { silentLogger } from "../../src/log.js";
import type { FakeAcpLogEntry, FakeAcpScript } from "../support/fake-acp-agent.js";
import { tempDir } from "../support/server-process.js";
import { itemsOf, ModelScript, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

const FAKE_ACP = fileURLToPath(new URL("../support/fake-acp-agent.js", import.meta.url));

/** A fake ACP agent with its script, and what it received (read from its log). */
class FakeAcp {
  readonly dir = tempDir("acp");
  readonly scriptFile = path.join(this.dir, "script.json");
  readonly logFile = path.join(this.dir, "received.jsonl");

  constructor(script: FakeAcpScript) {
    fs.writeFileSync(this.scriptFile, JSON.stringify(script));
  }

  get backend() {
    return {
      type: "acp" as const,
      command: process.execPath,
      args: [FAKE_ACP],
      env: { FAKE_ACP_SCRIPT: this.scriptFile, FAKE_ACP_LOG: this.logFile },
    };
  }

  private log(): FakeAcpLogEntry[] {
    if (!fs.existsSync(this.logFile)) return [];
    return fs
      .readFileSync(this.logFile, "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FakeAcpLogEntry);
  }

  received(method: string): any[] {
    return this.log().flatMap((e) => (e.event === "received" && e.method === method ? [e.params] : []));
  }

  starts(): number {
    return this.log().filter((e) => e.event === "start").length;
  }
}

const joined = (deltas: Array<{ delta: string }>): string => deltas.map((d) => d.delta).join("");

describe("acp backend (fake ACP agent)", () => {
  let model: ModelScript;
  let h: TypedHarness;
  let decision: ApprovalDecision = "accept";
  before(async () => {
    model = await ModelScript.start();
    h = await startTypedHarness({ model, onApproval: () => decision, files: { "notes.txt": "line one\nline two\n" } });
  });
  after(async () => {
    await h.close();
    model.assertConsumed(); // the built-in engine's model is never called
    await model.fake.close();
  });

  it("streams thoughts and text, reports plan, usage and cost, and shows a tool call with its result", async () => {
    const agent = new FakeAcp({
      turns: {
        hello: [
          { thought: ["Let me ", "think."] },
          {
            plan: [
              { content: "Look around", status: "completed" },
              { content: "Answer", status: "in_progress" },
            ],
          },
          { tool: { title: "docs/search", input: { q: "acp" }, result: "3 hits" } },
          { message: ["Hel", "lo ", "world"] },
          { usage: { input: 120, output: 30, costUsd: 0.25 } },
        ],
      },
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "hello")).method, "turn/completed");

    assert.equal(joined(h.notifications("item/reasoning/delta", threadId)), "Let me think.");
    assert.equal(joined(h.notifications("item/agentMessage/delta", threadId)), "Hello world");
    const items = h.completedItems(threadId);
    assert.deepEqual(
      items.map((i) => i.type),
      ["userMessage", "reasoningContent", "toolCall", "toolResult", "agentMessage"],
    );
    const result = itemsOf(items, "toolResult")[0]!;
    assert.deepEqual([result.payload.toolName, result.payload.success, result.payload.output], ["docs/search", true, "3 hits"]);
    assert.deepEqual(itemsOf(items, "toolCall")[0]!.payload.arguments, { q: "acp" });
    assert.deepEqual(h.notifications("plan/updated", threadId).at(-1)!.plan.steps, [
      { step: "Look around", status: "completed" },
      { step: "Answer", status: "in_progress" },
    ]);
    const usage = h.notifications("item/usage/delta", threadId).at(-1)!.total;
    assert.equal(usage.inputTokens, 120);
    assert.equal(usage.outputTokens, 30);
    assert.equal(usage.costUsd, 0.25);
    // The agent started one session in the thread's workspace, without MCP servers of ours.
    const [created] = agent.received("session/new");
    assert.equal(fs.realpathSync(created.cwd), fs.realpathSync(h.workspace));
  });

  it("keeps the agent and its session for the next turn", async () => {
    const agent = new FakeAcp({ turns: {} });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "one")).method, "turn/completed");
    assert.equal((await h.runTurn(threadId, "two")).method, "turn/completed");
    assert.equal(agent.starts(), 1);
    assert.equal(agent.received("session/new").length, 1);
    const prompts = agent.received("session/prompt");
    assert.equal(prompts.length, 2);
    assert.equal(prompts[0].sessionId, prompts[1].sessionId);
  });

  it("a permission request becomes an approval; accepted, the command runs in a terminal Switchyard serves, asked once", async () => {
    decision = "accept";
    const agent = new FakeAcp({ turns: { run: [{ command: "echo from-terminal; exit 3", permission: true, terminal: true }] } });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "run")).method, "turn/completed");
    const asked = h.approvals.filter((r) => r.threadId === threadId);
    assert.equal(asked.length, 1, "the terminal of an allowed command is not asked again");
    assert.equal(asked[0]!.approvalType, "shell");
    assert.equal(asked[0]!.operation, "echo from-terminal; exit 3");
    const command = itemsOf(h.completedItems(threadId), "commandExecution")[0]!;
    assert.match(String(command.payload.output), /from-terminal/);
    assert.equal(command.payload.exitCode, 3);
    assert.match(joined(h.notifications("item/commandExecution/outputDelta", threadId)), /from-terminal/);
  });

  it("declined, the agent gets its reject option and the command does not run", async () => {
    decision = "decline";
    const marker = path.join(h.workspace, "declined-ran");
    const agent = new FakeAcp({
      turns: { run: [{ command: `touch ${marker}`, permission: true, terminal: true }, { message: ["fine"] }] },
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "run")).method, "turn/completed");
    assert.equal(fs.existsSync(marker), false);
    assert.equal(itemsOf(h.completedItems(threadId), "commandExecution")[0]!.payload.exitCode, null);
  });

  it("a terminal the agent opens without asking is asked for; declined, terminal/create fails", async () => {
    decision = "decline";
    const marker = path.join(h.workspace, "unasked-ran");
    const agent = new FakeAcp({ turns: { sneak: [{ command: `touch ${marker}`, terminal: true }] } });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "sneak");
    // The fake does not handle the refusal: its prompt fails, and so does the turn, with the reason.
    assert.equal(end.method, "turn/failed");
    assert.equal(h.approvals.filter((r) => r.threadId === threadId).length, 1);
    assert.equal(fs.existsSync(marker), false);
  });

  it("an accepted edit is written through fs/write_text_file and shows as a fileChange and the turn's diff", async () => {
    decision = "accept";
    const agent = new FakeAcp({
      turns: { edit: [{ edit: { path: "notes.txt", oldText: "line one\nline two\n", newText: "line one\nline 2\n" }, permission: true }] },
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "edit")).method, "turn/completed");
    const asked = h.approvals.filter((r) => r.threadId === threadId);
    assert.equal(asked.length, 1, "the write of an allowed edit is not asked again");
    assert.equal(asked[0]!.approvalType, "file");
    assert.equal(asked[0]!.target, path.join(fs.realpathSync(h.workspace), "notes.txt"));
    assert.equal(fs.readFileSync(path.join(h.workspace, "notes.txt"), "utf8"), "line one\nline 2\n");
    const change = itemsOf(h.completedItems(threadId), "fileChange")[0]!;
    assert.equal(change.payload.path, "notes.txt");
    assert.match(String(change.payload.diff), /-line two\n\+line 2/);
    assert.match(h.notifications("turn/diff/updated", threadId).at(-1)!.diff, /diff --git a\/notes.txt b\/notes.txt/);
  });

  it("a write the agent did not ask for is asked; declined, the file is untouched", async () => {
    decision = "decline";
    const agent = new FakeAcp({ turns: { sneak: [{ edit: { path: "sneaky.txt", oldText: null, newText: "gotcha\n" } }] } });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "sneak")).method, "turn/completed");
    assert.equal(h.approvals.filter((r) => r.threadId === threadId && r.approvalType === "file").length, 1);
    assert.equal(fs.existsSync(path.join(h.workspace, "sneaky.txt")), false);
    assert.equal(itemsOf(h.completedItems(threadId), "fileChange").length, 0);
  });

  it("files are read inside the workspace only", async () => {
    const outside = path.join(tempDir("outside"), "secret.txt");
    fs.writeFileSync(outside, "top secret");
    const agent = new FakeAcp({ turns: { read: [{ read: path.join(h.workspace, "notes.txt") }, { read: outside }] } });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    assert.equal((await h.runTurn(threadId, "read")).method, "turn/completed");
    const text = itemsOf(h.completedItems(threadId), "agentMessage")
      .map((i) => i.payload.text)
      .join("\n");
    assert.match(text, /read: line one/);
    assert.match(text, /read failed: .*outside the workspace/);
    assert.doesNotMatch(text, /top secret/);
  });

  it("interrupt sends session/cancel and the turn ends cancelled promptly", async () => {
    const agent = new FakeAcp({ turns: { long: [{ message: ["working..."] }, { waitForCancel: true }] } });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const turnId = await h.startTurn(threadId, "long");
    await h.notification("item/agentMessage/delta", (p) => p.threadId === threadId);
    const asked = Date.now();
    await h.client.interrupt(threadId, turnId);
    const end = await h.client.turnEnd(turnId);
    assert.equal(end.method, "turn/cancelled");
    assert.ok(Date.now() - asked < 3_000, "ended without waiting for the stop timeout");
    assert.equal(agent.received("session/cancel").length, 1);
  });

  it("an agent that ignores session/cancel is stopped after the grace period, and the next turn loads its session", async () => {
    const agent = new FakeAcp({
      turns: { stuck: [{ message: ["hm"] }, { waitForCancel: true, ignoreCancel: true }], after: [{ message: ["back"] }] },
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const turnId = await h.startTurn(threadId, "stuck");
    await h.notification("item/agentMessage/delta", (p) => p.threadId === threadId);
    await h.client.interrupt(threadId, turnId);
    assert.equal((await h.client.turnEnd(turnId, 15_000)).method, "turn/cancelled");
    const next = await h.runTurn(threadId, "after");
    assert.equal(next.method, "turn/completed", JSON.stringify(next.params));
    assert.equal(agent.starts(), 2);
    // The new process loads the session the first one created.
    assert.equal(agent.received("session/load")[0].sessionId, agent.received("session/prompt")[0].sessionId);
  });

  it("an agent that crashes mid-turn fails the turn with backendExited and its stderr; items are closed", async () => {
    const agent = new FakeAcp({
      turns: { crash: [{ message: ["about to"] }, { crash: { code: 3, stderr: "fatal: the fake agent fell over\n" } }] },
    });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "crash");
    assert.equal(end.method, "turn/failed");
    if (end.method !== "turn/failed") return;
    assert.equal(end.params.error.code, "backendExited");
    assert.match(end.params.error.message, /code 3/);
    assert.match(end.params.error.message, /the fake agent fell over/);
    const completed = new Set(h.completedItems(threadId).map((i) => i.id));
    assert.deepEqual(
      h
        .notifications("item/started", threadId)
        .map((p) => p.item.id)
        .filter((id) => !completed.has(id)),
      [],
    );
  });

  it("an agent that fails initialize fails the turn with backendError and its message", async () => {
    const agent = new FakeAcp({ turns: {}, failInitialize: true });
    const threadId = await h.startThread({ configuration: { backend: agent.backend } });
    const end = await h.runTurn(threadId, "hello");
    assert.equal(end.method, "turn/failed");
    if (end.method !== "turn/failed") return;
    assert.equal(end.params.error.code, "backendError");
    assert.match(end.params.error.message, /broken on purpose/);
  });
});

describe("acp backend across a Switchyard restart", () => {
  let model: ModelScript;
  before(async () => {
    model = await ModelScript.start();
  });
  after(() => model.fake.close());

  async function twoLives(agent: FakeAcp): Promise<{ threadId: string; second: TypedHarness }> {
    const first = await startTypedHarness({ model });
    let threadId: string;
    try {
      threadId = await first.startThread({ configuration: { backend: agent.backend } });
      assert.equal((await first.runTurn(threadId, "one")).method, "turn/completed");
    } finally {
      await first.close();
    }
    const second = await startTypedHarness({ model, dataDir: first.dataDir });
    await second.client.request("thread/resume", { threadId });
    return { threadId, second };
  }

  it("loads the recorded session with session/load; the replayed history is not recorded again", async () => {
    const agent = new FakeAcp({ turns: { one: [{ message: ["first life"] }], two: [{ message: ["second life"] }] } });
    const { threadId, second } = await twoLives(agent);
    try {
      assert.equal((await second.runTurn(threadId, "two")).method, "turn/completed");
      assert.equal(agent.starts(), 2);
      const [created] = agent.received("session/new");
      const [loaded] = agent.received("session/load");
      assert.equal(loaded.sessionId, agent.received("session/prompt")[0].sessionId);
      assert.ok(created, "one session was created, in the first life");
      assert.equal(agent.received("session/new").length, 1, "no new session");
      const texts = itemsOf(second.completedItems(threadId), "agentMessage").map((i) => i.payload.text);
      assert.deepEqual(texts, ["second life"]);
    } finally {
      await second.close();
    }
  });

  it("when the agent cannot load it, says so (backendSessionLost) and starts a new session", async () => {
    const agent = new FakeAcp({ load: "refuse", turns: { one: [{ message: ["first"] }], two: [{ message: ["fresh"] }] } });
    const { threadId, second } = await twoLives(agent);
    try {
      assert.equal((await second.runTurn(threadId, "two")).method, "turn/completed");
      assert.equal(agent.received("session/load").length, 1);
      assert.equal(agent.received("session/new").length, 2);
      const notice = itemsOf(second.completedItems(threadId), "systemNotice")[0]!;
      assert.equal(notice.payload.kind, "backendSessionLost");
      assert.match(String(notice.payload.message), /could not load/);
    } finally {
      await second.close();
    }
  });
});

describe("acp probe", () => {
  const deps: BackendDeps = { log: silentLogger, env: process.env, agentRegistryDir: tempDir("agents"), idleTimeoutMs: 60_000 };

  it("initializes the agent to report its name, version and features", async () => {
    const agent = new FakeAcp({ turns: {} });
    const result = await probe(agent.backend, deps);
    assert.equal(result.available, true);
    assert.equal(result.version, "fake-acp-agent 9.9.9");
    assert.ok(result.features.includes("resume") && result.features.includes("images"));
    assert.equal(agent.received("session/new").length, 0, "no session is started");
  });

  it("reports a missing binary as unavailable", async () => {
    const result = await probe({ type: "acp", command: path.join(tempDir("noacp"), "agent") }, deps);
    assert.equal(result.available, false);
    assert.match(result.problem ?? "", /not found/);
  });
});
