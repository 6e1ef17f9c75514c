// The codex backend end to end: the built CLI runs threads configured with
// `backend: {type: "codex"}` on a scripted fake `codex app-server`, and the tests check what an
// AppServer client sees and what the fake received.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { ApprovalDecision } from "../../src/client/index.js";
import type { BackendDeps } from "../../src/backends/backend.js";
import { probe } from "../../src/backends/codex/index.js";
import { silentLogger } from "../../src/log.js";
import type { FakeCodexLogEntry, FakeCodexScript } from "../support/fake-codex-app-server.js";
import { tempDir } from "../support/server-process.js";
import { itemsOf, ModelScript, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

const FAKE_CODEX = fileURLToPath(new URL("../support/fake-codex-app-server.js", import.meta.url));

/** A fake codex with its script, and what it received (read from its log). */
class FakeCodex {
  readonly dir = tempDir("codex");
  readonly scriptFile = path.join(this.dir, "script.json");
  readonly logFile = path.join(this.dir, "received.jsonl");

  constructor(script: FakeCodexScript) {
    fs.writeFileSync(this.scriptFile, JSON.stringify(script));
  }

  get backend() {
    return {
      type: "codex" as const,
      command: process.execPath,
      args: [FAKE_CODEX],
      env: { FAKE_CODEX_SCRIPT: this.scriptFile, FAKE_CODEX_LOG: this.logFile },
    };
  }

  log(): FakeCodexLogEntry[] {
    if (!fs.existsSync(this.logFile)) return [];
    return fs
      .readFileSync(this.logFile, "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FakeCodexLogEntry);
  }

  /** Requests and notifications the fake received, by method. */
  received(method: string): Array<{ id?: number | string; params?: any }> {
    return this.log().flatMap((e) => (e.event === "received" && e.message.method === method ? [e.message] : []));
  }

  /** The client's answers to the fake's requests (approval decisions). */
  answers(): any[] {
    return this.log().flatMap((e) =>
      e.event === "received" && e.message.method === undefined ? [e.message.result ?? e.message.error] : [],
    );
  }

  starts(): number {
    return this.log().filter((e) => e.event === "start").length;
  }

  threadsStarted(): string[] {
    return this.log().flatMap((e) => (e.event === "threadStarted" ? [e.threadId] : []));
  }
}

const joined = (deltas: Array<{ delta: string }>): string => deltas.map((d) => d.delta).join("");

describe("codex backend (fake codex app-server)", () => {
  let model: ModelScript;
  let h: TypedHarness;
  let decision: ApprovalDecision = "accept";
  before(async () => {
    model = await ModelScript.start();
    h = await startTypedHarness({ model, onApproval: () => decision });
  });
  after(async () => {
    await h.close();
    model.assertConsumed(); // the built-in engine's model is never called
    await model.fake.close();
  });

  it("streams reasoning and text, reports usage and plan, and starts a codex thread in the workspace", async () => {
    const codex = new FakeCodex({
      turns: {
        hello: [
          { reasoning: ["Let me ", "think."] },
          {
            plan: [
              { step: "Look around", status: "completed" },
              { step: "Answer", status: "inProgress" },
            ],
            explanation: "Two steps",
          },
          { usage: { input: 100, output: 20, cached: 10, reasoning: 5 } },
          { message: ["Hel", "lo ", "world"] },
          { usage: { input: 150, output: 30 } },
        ],
      },
    });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    const end = await h.runTurn(threadId, "hello");
    assert.equal(end.method, "turn/completed");

    assert.equal(joined(h.notifications("item/reasoning/delta", threadId)), "Let me think.");
    assert.equal(joined(h.notifications("item/agentMessage/delta", threadId)), "Hello world");
    const items = h.completedItems(threadId);
    assert.deepEqual(
      itemsOf(items, "agentMessage").map((i) => i.payload.text),
      ["Hello world"],
    );
    assert.deepEqual(
      itemsOf(items, "reasoningContent").map((i) => i.payload.text),
      ["Let me think."],
    );
    assert.deepEqual(
      itemsOf(items, "userMessage").map((i) => i.payload.text),
      ["hello"],
    );

    const usage = h.notifications("item/usage/delta", threadId);
    assert.deepEqual(
      usage.map((u) => [u.usage.inputTokens, u.usage.outputTokens]),
      [
        [100, 20],
        [150, 30],
      ],
    );
    assert.equal(usage[0]!.usage.cachedInputTokens, 10);
    assert.equal(usage[0]!.usage.reasoningTokens, 5);
    assert.equal(usage[0]!.usage.costUsd, undefined, "no cost unless codex gives one");
    assert.equal(end.params.turn.tokenUsage?.inputTokens, 250);

    const plan = h.notifications("plan/updated", threadId).at(-1)!.plan;
    assert.equal(plan.explanation, "Two steps");
    assert.deepEqual(plan.steps, [
      { step: "Look around", status: "completed" },
      { step: "Answer", status: "in_progress" },
    ]);

    const [init] = codex.received("initialize");
    assert.equal(init!.params.clientInfo.name, "switchyard");
    assert.equal(codex.received("initialized").length, 1);
    const [start] = codex.received("thread/start");
    assert.equal(start!.params.cwd, h.workspace);
    assert.equal(start!.params.approvalPolicy, "untrusted");
    const [turn] = codex.received("turn/start");
    assert.equal(turn!.params.threadId, codex.threadsStarted()[0]);
    assert.deepEqual(turn!.params.input, [{ type: "text", text: "hello", text_elements: [] }]);
  });

  it("reuses the codex process and thread for the next turn", async () => {
    const codex = new FakeCodex({ turns: { one: [{ message: ["first"] }], two: [{ message: ["second"] }] } });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    assert.equal((await h.runTurn(threadId, "one")).method, "turn/completed");
    assert.equal((await h.runTurn(threadId, "two")).method, "turn/completed");
    assert.equal(codex.starts(), 1);
    assert.equal(codex.received("thread/start").length, 1);
    assert.deepEqual(
      itemsOf(h.completedItems(threadId), "agentMessage").map((i) => i.payload.text),
      ["first", "second"],
    );
  });

  it("an accepted command runs and streams its output; codex gets accept", async () => {
    decision = "accept";
    const codex = new FakeCodex({
      turns: { run: [{ command: "echo hi-there", output: "hi-there\n", approval: true }, { message: ["done"] }] },
    });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    assert.equal((await h.runTurn(threadId, "run")).method, "turn/completed");

    const request = h.approvals.find((r) => r.threadId === threadId)!;
    assert.equal(request.approvalType, "shell");
    assert.equal(request.operation, "echo hi-there");
    assert.equal(request.target, h.workspace);
    assert.equal(joined(h.notifications("item/commandExecution/outputDelta", threadId)), "hi-there\n");
    const command = itemsOf(h.completedItems(threadId), "commandExecution")[0]!;
    assert.equal(command.payload.command, "echo hi-there");
    assert.equal(command.payload.output, "hi-there\n");
    assert.equal(command.payload.exitCode, 0);
    assert.equal(command.payload.callId, request.callId);
    assert.deepEqual(codex.answers(), [{ decision: "accept" }]);
  });

  it("a declined command does not run; codex gets decline and the turn goes on", async () => {
    decision = "decline";
    const codex = new FakeCodex({
      turns: { run: [{ command: "rm -rf stuff", output: "gone\n", approval: true }, { message: ["ok, not doing it"] }] },
    });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    assert.equal((await h.runTurn(threadId, "run")).method, "turn/completed");
    assert.deepEqual(codex.answers(), [{ decision: "decline" }]);
    const command = itemsOf(h.completedItems(threadId), "commandExecution")[0]!;
    assert.equal(command.payload.output, "");
    assert.equal(h.notifications("item/commandExecution/outputDelta", threadId).length, 0);
    assert.ok(itemsOf(h.completedItems(threadId), "agentMessage").some((i) => i.payload.text === "ok, not doing it"));
  });

  it("acceptForSession goes to codex as acceptForSession; cancel cancels the turn", async () => {
    decision = "acceptForSession";
    const codex = new FakeCodex({
      turns: {
        session: [{ command: "make", output: "built\n", approval: true }],
        cancel: [{ command: "make clean", output: "", approval: true }, { message: ["never"] }],
      },
    });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    assert.equal((await h.runTurn(threadId, "session")).method, "turn/completed");
    decision = "cancel";
    const end = await h.runTurn(threadId, "cancel");
    assert.equal(end.method, "turn/cancelled");
    if (end.method === "turn/cancelled") assert.equal(end.params.reason, "approvalCancelled");
    assert.deepEqual(
      codex.answers().filter((a) => a.decision),
      [{ decision: "acceptForSession" }, { decision: "cancel" }],
    );
  });

  it("a file change asks with the file's path, and becomes a fileChange item and the turn's diff", async () => {
    decision = "accept";
    const codex = new FakeCodex({
      turns: {
        write: [{ fileChange: { path: "notes.txt", kind: "add", content: "hello notes\n", diff: "hello notes\n" }, approval: true }],
      },
    });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    const end = await h.runTurn(threadId, "write");
    assert.equal(end.method, "turn/completed");
    const request = h.approvals.find((r) => r.threadId === threadId)!;
    assert.equal(request.approvalType, "file");
    assert.equal(request.target, path.join(h.workspace, "notes.txt"));
    assert.deepEqual(codex.answers(), [{ decision: "accept" }]);
    assert.equal(fs.readFileSync(path.join(h.workspace, "notes.txt"), "utf8"), "hello notes\n");
    const change = itemsOf(h.completedItems(threadId), "fileChange")[0]!;
    assert.equal(change.payload.path, "notes.txt");
    assert.equal(change.payload.kind, "add");
    assert.match(String(change.payload.diff), /\+hello notes/);
    assert.match(String(change.payload.diff), /new file mode/);
    const turnDiff = h.notifications("turn/diff/updated", threadId).at(-1)!.diff;
    assert.match(turnDiff, /diff --git a\/notes.txt b\/notes.txt/);
  });

  it("interrupt sends turn/interrupt and the turn ends cancelled promptly", async () => {
    const codex = new FakeCodex({ turns: { long: [{ message: ["working..."] }, { waitForInterrupt: true }] } });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    const turnId = await h.startTurn(threadId, "long");
    await h.notification("item/agentMessage/delta", (p) => p.threadId === threadId);
    const asked = Date.now();
    await h.client.interrupt(threadId, turnId);
    const end = await h.client.turnEnd(turnId);
    assert.equal(end.method, "turn/cancelled");
    if (end.method === "turn/cancelled") assert.equal(end.params.reason, "interrupted");
    assert.ok(Date.now() - asked < 3_000, "ended without waiting for the stop timeout");
    const [interrupt] = codex.received("turn/interrupt");
    assert.equal(interrupt!.params.threadId, codex.threadsStarted()[0]);
    assert.ok(interrupt!.params.turnId);
  });

  it("a codex that ignores turn/interrupt is stopped after the grace period, and the next turn resumes", async () => {
    const codex = new FakeCodex({ turns: { stuck: [{ waitForInterrupt: true, ignoreInterrupt: true }], after: [{ message: ["back"] }] } });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    const turnId = await h.startTurn(threadId, "stuck");
    await h.notification("item/started", (p) => p.threadId === threadId && p.item.type === "userMessage");
    const asked = Date.now();
    await h.client.interrupt(threadId, turnId);
    const end = await h.client.turnEnd(turnId, 15_000);
    assert.equal(end.method, "turn/cancelled");
    const took = Date.now() - asked;
    assert.ok(took >= 4_000 && took < 10_000, `stopped after the grace period (took ${took} ms)`);
    assert.equal((await h.runTurn(threadId, "after")).method, "turn/completed");
    assert.equal(codex.starts(), 2);
    assert.deepEqual(
      codex.received("thread/resume").map((m) => m.params.threadId),
      codex.threadsStarted(),
    );
  });

  it("a codex that crashes mid-turn fails the turn with backendExited and its stderr; the next turn resumes", async () => {
    const codex = new FakeCodex({
      turns: {
        crash: [{ message: ["about to"] }, { crash: { code: 3, stderr: "fatal: the fake codex fell over\n" } }],
        again: [{ message: ["recovered"] }],
      },
    });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    const end = await h.runTurn(threadId, "crash");
    assert.equal(end.method, "turn/failed");
    if (end.method !== "turn/failed") return;
    assert.equal(end.params.error.code, "backendExited");
    assert.match(end.params.error.message, /code 3/);
    assert.match(end.params.error.message, /the fake codex fell over/);
    // Items left open by the crash are closed.
    const started = h.notifications("item/started", threadId).map((p) => p.item.id);
    const completed = new Set(h.completedItems(threadId).map((i) => i.id));
    assert.deepEqual(
      started.filter((id) => !completed.has(id)),
      [],
    );

    assert.equal((await h.runTurn(threadId, "again")).method, "turn/completed");
    assert.equal(codex.starts(), 2);
    const [resume] = codex.received("thread/resume");
    assert.equal(resume!.params.threadId, codex.threadsStarted()[0]);
  });

  it("a codex turn that fails ends with backendError and codex's message", async () => {
    const codex = new FakeCodex({ turns: { bad: [{ fail: "stream disconnected before completion" }] } });
    const threadId = await h.startThread({ configuration: { backend: codex.backend } });
    const end = await h.runTurn(threadId, "bad");
    assert.equal(end.method, "turn/failed");
    if (end.method !== "turn/failed") return;
    assert.equal(end.params.error.code, "backendError");
    assert.match(end.params.error.message, /stream disconnected/);
  });

  it("a missing binary fails the turn with backendNotFound", async () => {
    const threadId = await h.startThread({
      configuration: { backend: { type: "codex", command: path.join(tempDir("nocodex"), "codex") } },
    });
    const end = await h.runTurn(threadId, "hello");
    assert.equal(end.method, "turn/failed");
    if (end.method !== "turn/failed") return;
    assert.equal(end.params.error.code, "backendNotFound");
  });
});

describe("codex backend across a Switchyard restart", () => {
  let model: ModelScript;
  before(async () => {
    model = await ModelScript.start();
  });
  after(() => model.fake.close());

  async function twoLives(codex: FakeCodex): Promise<{ threadId: string; second: TypedHarness }> {
    const first = await startTypedHarness({ model });
    let threadId: string;
    try {
      threadId = await first.startThread({ configuration: { backend: codex.backend } });
      assert.equal((await first.runTurn(threadId, "one")).method, "turn/completed");
    } finally {
      await first.close();
    }
    const second = await startTypedHarness({ model, dataDir: first.dataDir });
    await second.client.request("thread/resume", { threadId });
    return { threadId, second };
  }

  it("resumes the recorded codex thread with thread/resume", async () => {
    const codex = new FakeCodex({ turns: { one: [{ message: ["first life"] }], two: [{ message: ["second life"] }] } });
    const { threadId, second } = await twoLives(codex);
    try {
      assert.equal((await second.runTurn(threadId, "two")).method, "turn/completed");
      assert.equal(codex.starts(), 2);
      const [resume] = codex.received("thread/resume");
      assert.equal(resume!.params.threadId, codex.threadsStarted()[0]);
      assert.equal(resume!.params.cwd, codex.received("thread/start")[0]!.params.cwd, "in the thread's workspace");
      assert.equal(codex.received("thread/start").length, 1, "no new codex thread");
      assert.equal(itemsOf(second.completedItems(threadId), "systemNotice").length, 0);
    } finally {
      await second.close();
    }
  });

  it("when codex cannot resume, says so (backendSessionLost) and starts a new codex thread", async () => {
    const codex = new FakeCodex({ resume: "refuse", turns: { one: [{ message: ["first"] }], two: [{ message: ["fresh"] }] } });
    const { threadId, second } = await twoLives(codex);
    try {
      assert.equal((await second.runTurn(threadId, "two")).method, "turn/completed");
      assert.equal(codex.received("thread/resume").length, 1);
      assert.equal(codex.received("thread/start").length, 2);
      const notice = itemsOf(second.completedItems(threadId), "systemNotice")[0]!;
      assert.equal(notice.payload.kind, "backendSessionLost");
      assert.match(String(notice.payload.message), /could not resume/);
      // The new codex thread is the one recorded now: the next turn uses it.
      const [, fresh] = codex.threadsStarted();
      assert.equal(codex.received("turn/start").at(-1)!.params.threadId, fresh);
    } finally {
      await second.close();
    }
  });
});

describe("codex probe", () => {
  const deps: BackendDeps = { log: silentLogger, env: process.env, agentRegistryDir: tempDir("agents"), idleTimeoutMs: 60_000 };

  it("reports the version of a codex that answers --version", async () => {
    const result = await probe({ type: "codex", command: process.execPath, args: [FAKE_CODEX] }, deps);
    assert.equal(result.available, true);
    assert.equal(result.version, "0.0.0-fake");
    assert.ok(result.features.includes("approvals") && result.features.includes("resume"));
  });

  it("reports a missing binary as unavailable", async () => {
    const result = await probe({ type: "codex", command: path.join(tempDir("nocodex"), "codex") }, deps);
    assert.equal(result.available, false);
    assert.match(result.problem ?? "", /not found/);
  });
});
