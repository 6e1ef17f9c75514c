// The runtime in process, below the faces: a scripted stub backend (an AgentBackend like any
// other) on an in-memory SQLite store. Turn lifecycle, queue, steer, interrupt, the approval
// gate, crash recovery and fork, each checked on the events and the store.
import assert from "node:assert/strict";
import fs from "node:fs";
import { describe, it } from "node:test";
import type { AgentBackend, BackendSet, TurnContext, TurnOutcome } from "../../src/backends/backend.js";
import type { RuntimeEvent } from "../../src/domain/events.js";
import type { ApprovalDecision, ThreadConfiguration } from "../../src/domain/model.js";
import { silentLogger } from "../../src/log.js";
import { Runtime } from "../../src/runtime/runtime.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import type { ApprovalAsk } from "../../src/tools/tool.js";
import { createDefaultRegistry } from "../../src/tools/registry.js";
import { tempDir } from "../support/server-process.js";
import { WorkspaceResources } from "../../src/workspace/index.js";

type Script = (ctx: TurnContext) => Promise<TurnOutcome>;

/** A backend whose turns run the scripts given to it, in order. */
class StubBackend implements AgentBackend {
  readonly type = "builtin";
  readonly scripts: Script[] = [];
  readonly contexts: TurnContext[] = [];

  runTurn(ctx: TurnContext): Promise<TurnOutcome> {
    this.contexts.push(ctx);
    const script = this.scripts.shift() ?? (async () => ({ status: "completed" }) as const);
    return script(ctx);
  }
  async release(): Promise<void> {}
  async close(): Promise<void> {}
}

const say =
  (...parts: string[]): Script =>
  async (ctx) => {
    const item = ctx.recorder.start("agentMessage", { text: "" });
    for (const part of parts) {
      item.payload.text += part;
      ctx.recorder.delta(item, "agentMessage", part);
    }
    ctx.recorder.complete(item);
    return { status: "completed" };
  };

const ASK: ApprovalAsk = {
  approvalType: "shell",
  operation: "rm -rf build",
  target: "/ws",
  scopeKey: "shell:rm -rf build",
  reason: "test",
};

/** A gate you open by hand, for turns that must stay running until the test says so. */
function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  return { wait: new Promise<void>((resolve) => (open = resolve)), open: () => open() };
}

class World {
  readonly backend = new StubBackend();
  readonly events: RuntimeEvent[] = [];
  readonly workspace = tempDir("runtime-ws");
  readonly runtime: Runtime;
  private waiters: Array<() => void> = [];

  constructor(readonly store = new SqliteStore(":memory:")) {
    const backends: BackendSet = {
      backendFor: async () => this.backend,
      availability: async () => [],
      release: async () => {},
      close: async () => {},
    };
    this.runtime = new Runtime({
      store,
      backends,
      tools: createDefaultRegistry(),
      logger: silentLogger,
      workspace: new WorkspaceResources({ builtinSkillsDir: tempDir("skills"), configDir: tempDir("config") }),
      defaults: { backend: { type: "builtin" }, approvalTimeoutMs: 10_000 },
    });
    this.runtime.subscribe((event) => {
      this.events.push(event);
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  thread(configuration?: ThreadConfiguration): string {
    return this.runtime.startThread({ workspacePath: this.workspace, originChannel: "test", ...(configuration ? { configuration } : {}) })
      .id;
  }

  /** Resolves with the first delivered event matching, waiting for it if needed. */
  async event<T extends RuntimeEvent["type"]>(type: T, match: (e: Extract<RuntimeEvent, { type: T }>) => boolean = () => true) {
    for (;;) {
      const found = this.events.find(
        (e): e is Extract<RuntimeEvent, { type: T }> => e.type === type && match(e as Extract<RuntimeEvent, { type: T }>),
      );
      if (found) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async ended(turnId: string): Promise<RuntimeEvent> {
    for (;;) {
      const found = this.events.find(
        (e) => (e.type === "turn.completed" || e.type === "turn.failed" || e.type === "turn.cancelled") && e.data.turnId === turnId,
      );
      if (found) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  types(threadId: string): string[] {
    return this.events.filter((e) => e.threadId === threadId).map((e) => e.type);
  }
}

describe("runtime, in process with a stub backend", () => {
  it("runs a turn: events in order after the call returns, items in the store, the thread idle again", async () => {
    const w = new World();
    w.backend.scripts.push(say("Hel", "lo"));
    const threadId = w.thread();
    const turn = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "hi" }] });
    assert.equal(w.events.filter((e) => e.type === "turn.started").length, 0, "delivered on a later tick, after the answer");
    const end = await w.ended(turn.id);
    assert.equal(end.type, "turn.completed");
    const seqs = w.events.map((e) => e.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      "in seq order",
    );
    assert.deepEqual(
      w.types(threadId).filter((t) => t.startsWith("item.") || t.startsWith("turn.")),
      ["turn.started", "item.started", "item.delta", "item.delta", "item.completed", "turn.completed"],
    );
    const [stored] = await w.runtime.turnsOf(threadId);
    assert.equal(stored!.status, "completed");
    assert.deepEqual(
      stored!.items!.map((i) => [i.type, (i.payload as { text?: string }).text]),
      [["agentMessage", "Hello"]],
    );
    assert.equal(w.runtime.runtimeState(threadId).running, false);
  });

  it("refuses a second turn while one runs; queued inputs run in order, a removed one never", async () => {
    const w = new World();
    const first = gate();
    w.backend.scripts.push(async () => (await first.wait, { status: "completed" }));
    const threadId = w.thread();
    const turn = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "one" }] });
    await assert.rejects(w.runtime.startTurn(threadId, { input: [{ type: "text", text: "again" }] }), /already running/);
    const two = await w.runtime.enqueue(threadId, [{ type: "text", text: "two" }]);
    await w.runtime.enqueue(threadId, [{ type: "text", text: "three" }]);
    assert.deepEqual(
      (await w.runtime.removeQueued(threadId, two.queuedInput!.id)).map((q) => q.input[0]),
      [{ type: "text", text: "three" }],
    );
    first.open();
    await w.ended(turn.id);
    const next = await w.event("turn.started", (e) => e.threadId === threadId && e.data.turn.id !== turn.id);
    assert.deepEqual(next.data.turn.input, [{ type: "text", text: "three" }]);
    await w.ended(next.data.turn.id);
    assert.deepEqual((await w.runtime.getThread(threadId)).queuedInputs, []);
    assert.equal(w.backend.contexts.length, 2);
  });

  it("writes to one thread that arrive together each act on the others' result: no queued input is lost", async () => {
    const w = new World();
    const first = gate();
    w.backend.scripts.push(async () => (await first.wait, { status: "completed" }));
    const threadId = w.thread();
    const turn = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "one" }] });
    const inputs = ["a", "b", "c"].map((text) => [{ type: "text" as const, text }]);
    await Promise.all(inputs.map((input) => w.runtime.enqueue(threadId, input)));
    assert.deepEqual(
      (await w.runtime.getThread(threadId)).queuedInputs.map((q) => q.input),
      inputs,
    );
    first.open();
    await w.ended(turn.id);
  });

  it("hands steering input to the running turn", async () => {
    const w = new World();
    const steered = gate();
    let seen: unknown;
    w.backend.scripts.push(async (ctx) => {
      await steered.wait;
      seen = ctx.takeSteering();
      return { status: "completed" };
    });
    const threadId = w.thread();
    const turn = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "go" }] });
    await w.event("turn.started");
    await w.runtime.steer(threadId, [{ type: "text", text: "also this" }], turn.id);
    await assert.rejects(w.runtime.steer(threadId, [{ type: "text", text: "x" }], "turn_other"), /not the running turn/);
    steered.open();
    await w.ended(turn.id);
    assert.deepEqual(seen, [[{ type: "text", text: "also this" }]]);
  });

  it("interrupt aborts the backend's signal and resolves with the cancelled turn", async () => {
    const w = new World();
    w.backend.scripts.push(
      (ctx) =>
        new Promise((resolve) =>
          ctx.signal.addEventListener("abort", () => resolve({ status: "cancelled", reason: "interrupted" }), { once: true }),
        ),
    );
    const threadId = w.thread();
    const turn = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "wait" }] });
    await w.event("turn.started");
    const ended = await w.runtime.interrupt(threadId, turn.id);
    assert.equal(ended.status, "cancelled");
    assert.equal(ended.cancelReason, "interrupted");
    await assert.rejects(() => w.runtime.interrupt(threadId), /No turn is running/);
  });

  it("approval gate: asks the client, records both items; a session grant answers the next ask itself", async () => {
    const w = new World();
    const asked: string[] = [];
    let answer: ApprovalDecision = "acceptForSession";
    w.runtime.approvals.addApprover({ canAnswer: () => true, ask: async (request) => (asked.push(request.operation), answer) });
    const decisions: ApprovalDecision[] = [];
    w.backend.scripts.push(async (ctx) => {
      decisions.push(await ctx.approve(ASK, "call_1"));
      decisions.push(await ctx.approve(ASK, "call_2"));
      answer = "decline";
      decisions.push(await ctx.approve({ ...ASK, operation: "ls", scopeKey: "shell:ls" }, "call_3"));
      return { status: "completed" };
    });
    const threadId = w.thread();
    const turn = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "do it" }] });
    await w.ended(turn.id);
    assert.deepEqual(decisions, ["acceptForSession", "acceptForSession", "decline"]);
    assert.deepEqual(asked, ["rm -rf build", "ls"], "the granted scope was not asked again");
    const resolved = w.events
      .filter((e) => e.type === "approval.resolved")
      .map((e) => (e.type === "approval.resolved" ? e.data.source : ""));
    assert.deepEqual(resolved, ["client", "sessionGrant", "client"]);
    const items = (await w.runtime.turnsOf(threadId))[0]!.items!.map((i) => i.type);
    assert.deepEqual(items, ["approvalRequest", "approvalResponse", "approvalResponse", "approvalRequest", "approvalResponse"]);
  });

  it("approval gate: the autoApprove policy accepts without asking or recording", async () => {
    const w = new World();
    w.runtime.approvals.addApprover({
      canAnswer: () => true,
      ask: async () => {
        throw new Error("must not be asked");
      },
    });
    let decision: ApprovalDecision | undefined;
    w.backend.scripts.push(async (ctx) => ((decision = await ctx.approve(ASK, "call_1")), { status: "completed" }));
    const threadId = w.thread({ approvalPolicy: "autoApprove" });
    await w.ended((await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "x" }] })).id);
    assert.equal(decision, "accept");
    assert.deepEqual((await w.runtime.turnsOf(threadId))[0]!.items, []);
  });

  it("recovery: a turn the process died in is failed, its streaming item closed with what streamed", async () => {
    const dir = tempDir("runtime-store");
    const first = new World(new SqliteStore(`${dir}/store.db`));
    first.backend.scripts.push(async (ctx) => {
      const item = ctx.recorder.start("agentMessage", { text: "" });
      ctx.recorder.delta(item, "agentMessage", "half an ");
      ctx.recorder.delta(item, "agentMessage", "answer");
      return new Promise(() => {}); // the process "dies" here
    });
    const threadId = first.thread();
    const turn = await first.runtime.startTurn(threadId, { input: [{ type: "text", text: "x" }] });
    await first.event("item.delta", (e) => e.data.delta === "answer");
    await first.store.close();

    const second = new World(new SqliteStore(`${dir}/store.db`));
    assert.equal(await second.runtime.recover(), 1);
    const [recovered] = await second.runtime.turnsOf(threadId);
    assert.equal(recovered!.id, turn.id);
    assert.equal(recovered!.status, "failed");
    assert.equal(recovered!.error?.code, "serverRestarted");
    assert.equal((recovered!.items![0]!.payload as { text: string }).text, "half an answer");
    assert.equal(await second.runtime.recover(), 0, "nothing left to recover");
    assert.ok(fs.existsSync(`${dir}/store.db`));
  });

  it("fork copies finished turns up to the one named, with new ids, and records where it came from", async () => {
    const w = new World();
    w.backend.scripts.push(say("first"), say("second"));
    const threadId = w.thread();
    const one = await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "1" }] });
    await w.ended(one.id);
    await w.ended((await w.runtime.startTurn(threadId, { input: [{ type: "text", text: "2" }] })).id);
    const fork = await w.runtime.forkThread(threadId, one.id);
    assert.deepEqual(fork.forkedFrom, { threadId, turnId: one.id });
    const copied = await w.runtime.turnsOf(fork.id);
    assert.equal(copied.length, 1);
    assert.notEqual(copied[0]!.id, one.id);
    assert.equal((copied[0]!.items![0]!.payload as { text: string }).text, "first");
    assert.notEqual(copied[0]!.items![0]!.id, (await w.runtime.turnsOf(threadId))[0]!.items![0]!.id);
    await assert.rejects(w.runtime.forkThread(threadId, "turn_nope"), /not part of thread/);
  });
});
