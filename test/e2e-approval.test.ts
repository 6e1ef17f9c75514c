// Shell approvals end to end: each decision, remembered grants, and the fallbacks when no
// client answers.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "./support/fake-model-server.js";
import { startHarness, text, type Harness } from "./support/harness.js";
import type { Message } from "./support/test-client.js";

type Item = { type: string; payload: Record<string, unknown> };

/** Scripts a model that runs one shell command, then (unless the turn ends) says "finished". */
function scriptShell(fake: FakeModelServer, command: string, callId: string, turnEndsAtApproval = false): void {
  fake.enqueue({ kind: "response", toolCalls: [{ id: callId, name: "bash", arguments: { command } }] });
  if (!turnEndsAtApproval) fake.enqueue({ kind: "response", text: "finished" });
}

function completedItems(h: Harness, threadId: string): Item[] {
  return h.client.notifications("item/completed").filter((p) => p.threadId === threadId).map((p) => p.item as Item);
}

function toolResult(h: Harness, threadId: string, callId: string): Item | undefined {
  return completedItems(h, threadId).find((i) => i.type === "toolResult" && i.payload.callId === callId);
}

describe("shell approval", () => {
  let h: Harness;
  let decision = "accept";
  before(async () => {
    h = await startHarness();
    h.client.handle("item/approval/request", () => ({ decision }));
  });
  after(() => h.close());

  it("accept runs the command once, streaming its output", async () => {
    decision = "accept";
    scriptShell(h.fake, "echo hello-from-bash > out.txt; cat out.txt", "call_accept");
    const threadId = await h.startThread();
    await h.client.call("turn/start", { threadId, input: text("run it") });
    const request = await h.client.waitFor((m) => m.method === "item/approval/request" && m.params?.threadId === threadId);
    assert.equal(request.params!.approvalType, "shell");
    assert.equal(request.params!.operation, "echo hello-from-bash > out.txt; cat out.txt");
    assert.equal(request.params!.target, h.workspace);
    assert.ok(String(request.params!.scopeKey).startsWith("shell:"));
    assert.ok(request.params!.requestId && request.params!.itemId);

    assert.equal((await h.client.turnEnd(threadId)).method, "turn/completed");
    const output = h.client.notifications("item/commandExecution/outputDelta").filter((p) => p.threadId === threadId).map((p) => p.delta).join("");
    assert.match(output, /hello-from-bash/);
    const resolved = await h.client.notification("item/approval/resolved", (p) => p.threadId === threadId);
    assert.equal(resolved.decision, "accept");
    const result = toolResult(h, threadId, "call_accept")!;
    assert.equal(result.payload.success, true);
    const command = completedItems(h, threadId).find((i) => i.type === "commandExecution")!;
    assert.equal(command.payload.exitCode, 0);
    assert.ok(fs.existsSync(path.join(h.workspace, "out.txt")));
    // The model got the command's output back.
    const last = h.fake.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> };
    assert.match(last.messages.find((m) => m.role === "tool")!.content, /hello-from-bash/);
  });

  it("decline refuses the tool and the turn goes on", async () => {
    decision = "decline";
    scriptShell(h.fake, "touch declined.txt", "call_decline");
    const threadId = await h.startThread();
    await h.client.call("turn/start", { threadId, input: text("run it") });
    assert.equal((await h.client.turnEnd(threadId)).method, "turn/completed");
    assert.equal(fs.existsSync(path.join(h.workspace, "declined.txt")), false);
    const result = toolResult(h, threadId, "call_decline")!;
    assert.equal(result.payload.success, false);
    assert.match(String(result.payload.output), /declined/);
    assert.ok(completedItems(h, threadId).some((i) => i.type === "agentMessage" && i.payload.text === "finished"));
  });

  it("cancel cancels the turn", async () => {
    decision = "cancel";
    scriptShell(h.fake, "touch cancelled.txt", "call_cancel", true);
    const threadId = await h.startThread();
    await h.client.call("turn/start", { threadId, input: text("run it") });
    const end = await h.client.turnEnd(threadId);
    assert.equal(end.method, "turn/cancelled");
    assert.equal(fs.existsSync(path.join(h.workspace, "cancelled.txt")), false);
  });

  it("acceptForSession is remembered for the thread's scope key", async () => {
    decision = "acceptForSession";
    const threadId = await h.startThread();
    scriptShell(h.fake, "echo one", "call_s1");
    await h.client.call("turn/start", { threadId, input: text("first") });
    await h.client.turnEnd(threadId);
    decision = "decline"; // would refuse if asked again
    scriptShell(h.fake, "echo two", "call_s2");
    const asked = h.client.notifications("item/approval/resolved").length;
    const second = await h.client.call("turn/start", { threadId, input: text("second") });
    await h.client.turnEnd(threadId, (second.turn as { id: string }).id);
    assert.equal(toolResult(h, threadId, "call_s2")!.payload.success, true);
    assert.equal(h.client.notifications("item/approval/resolved").length, asked, "no new approval was asked");
    const response = completedItems(h, threadId).filter((i) => i.type === "approvalResponse").at(-1)!;
    assert.equal(response.payload.source, "session");
  });
});

describe("approval fallbacks", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  it("a client without approvalSupport gets the policy's decline", async () => {
    const h = await startHarness({ fake, capabilities: { approvalSupport: false } });
    try {
      scriptShell(fake, "touch nope.txt", "call_noapproval");
      const threadId = await h.startThread();
      await h.client.call("turn/start", { threadId, input: text("run") });
      assert.equal((await h.client.turnEnd(threadId)).method, "turn/completed");
      assert.equal(h.client.received.some((m) => m.method === "item/approval/request"), false);
      assert.equal(toolResult(h, threadId, "call_noapproval")!.payload.success, false);
      assert.equal(fs.existsSync(path.join(h.workspace, "nope.txt")), false);
      const resolved = await h.client.notification("item/approval/resolved", (p) => p.threadId === threadId);
      assert.deepEqual([resolved.decision, resolved.source], ["decline", "policy"]);
    } finally {
      await h.close();
    }
  });

  it("an unanswered request times out into the policy, and interrupt policy cancels the turn", async () => {
    const h = await startHarness({ fake, args: ["--approval-timeout-ms", "300"] });
    try {
      scriptShell(fake, "touch late.txt", "call_timeout", true);
      const threadId = await h.startThread({ configuration: { approvalPolicy: "interrupt" } });
      await h.client.call("turn/start", { threadId, input: text("run") });
      await h.client.waitFor((m) => m.method === "item/approval/request");
      const end = await h.client.turnEnd(threadId);
      assert.equal(end.method, "turn/cancelled");
      const resolved = await h.client.notification("item/approval/resolved", (p) => p.threadId === threadId);
      assert.deepEqual([resolved.decision, resolved.source], ["cancel", "timeout"]);
    } finally {
      await h.close();
    }
  });

  it("autoApprove runs without asking", async () => {
    const h = await startHarness({ fake });
    try {
      scriptShell(fake, "touch auto.txt", "call_auto");
      const threadId = await h.startThread({ configuration: { approvalPolicy: "autoApprove" } });
      await h.client.call("turn/start", { threadId, input: text("run") });
      assert.equal((await h.client.turnEnd(threadId)).method, "turn/completed");
      assert.equal(h.client.received.some((m: Message) => m.method === "item/approval/request"), false);
      assert.ok(fs.existsSync(path.join(h.workspace, "auto.txt")));
    } finally {
      await h.close();
    }
  });

  it("acceptAlways persists across a restart", async () => {
    const first = await startHarness({ fake });
    first.client.handle("item/approval/request", () => ({ decision: "acceptAlways" }));
    scriptShell(fake, "echo always", "call_always1");
    const threadId = await first.startThread();
    await first.client.call("turn/start", { threadId, input: text("run") });
    await first.client.turnEnd(threadId);
    first.client.close();
    await first.server.exited;

    const second = await startHarness({ fake, dataDir: first.server.dataDir });
    try {
      second.client.handle("item/approval/request", () => ({ decision: "decline" }));
      await second.client.call("thread/resume", { threadId });
      scriptShell(fake, "echo always again", "call_always2");
      await second.client.call("turn/start", { threadId, input: text("again") });
      await second.client.turnEnd(threadId);
      assert.equal(second.client.received.some((m) => m.method === "item/approval/request"), false);
      assert.equal(toolResult(second, threadId, "call_always2")!.payload.success, true);
    } finally {
      await second.close();
    }
  });
});
