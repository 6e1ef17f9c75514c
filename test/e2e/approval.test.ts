// Shell approvals end to end: each decision, remembered grants, and the fallbacks when no
// client answers.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import type { ApprovalDecision } from "../../src/client/index.js";
import { itemsOf, ManualApprovals, ModelScript, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

/** Scripts a model that runs one shell command, then (unless the turn ends) says "finished". */
function scriptShell(model: ModelScript, command: string, callId: string, turnEndsAtApproval = false): void {
  model.enqueue({ kind: "response", toolCalls: [{ id: callId, name: "bash", arguments: { command } }] });
  if (!turnEndsAtApproval) model.enqueue({ kind: "response", text: "finished" });
}

function toolResult(h: TypedHarness, threadId: string, callId: string) {
  return itemsOf(h.completedItems(threadId), "toolResult").find((i) => i.payload.callId === callId);
}

describe("shell approval", () => {
  let h: TypedHarness;
  let decision: ApprovalDecision = "accept";
  before(async () => {
    h = await startTypedHarness({ onApproval: () => decision });
  });
  afterEach(() => h.model.assertConsumed());
  after(() => h.close());

  it("accept runs the command once, streaming its output", async () => {
    decision = "accept";
    scriptShell(h.model, "echo hello-from-bash > out.txt; cat out.txt", "call_accept");
    const threadId = await h.startThread();
    assert.equal((await h.runTurn(threadId, "run it")).method, "turn/completed");

    const requests = h.approvals.filter((r) => r.threadId === threadId);
    assert.equal(requests.length, 1);
    const request = requests[0]!;
    assert.equal(request.approvalType, "shell");
    assert.equal(request.operation, "echo hello-from-bash > out.txt; cat out.txt");
    assert.equal(request.target, h.workspace);
    assert.ok(request.scopeKey.startsWith("shell:"));
    assert.ok(request.requestId && request.itemId);

    const output = h
      .notifications("item/commandExecution/outputDelta", threadId)
      .map((p) => p.delta)
      .join("");
    assert.match(output, /hello-from-bash/);
    const resolved = await h.notification("item/approval/resolved", (p) => p.threadId === threadId);
    assert.equal(resolved.decision, "accept");
    const result = toolResult(h, threadId, "call_accept")!;
    assert.equal(result.payload.success, true);
    const command = itemsOf(h.completedItems(threadId), "commandExecution")[0]!;
    assert.equal(command.payload.exitCode, 0);
    assert.ok(fs.existsSync(path.join(h.workspace, "out.txt")));
    // The model got the command's output back.
    const last = h.fake.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> };
    assert.match(last.messages.find((m) => m.role === "tool")!.content, /hello-from-bash/);
  });

  it("decline refuses the tool and the turn goes on", async () => {
    decision = "decline";
    scriptShell(h.model, "touch declined.txt", "call_decline");
    const threadId = await h.startThread();
    assert.equal((await h.runTurn(threadId, "run it")).method, "turn/completed");
    assert.equal(fs.existsSync(path.join(h.workspace, "declined.txt")), false);
    const result = toolResult(h, threadId, "call_decline")!;
    assert.equal(result.payload.success, false);
    assert.match(String(result.payload.output), /declined/);
    assert.ok(itemsOf(h.completedItems(threadId), "agentMessage").some((i) => i.payload.text === "finished"));
  });

  it("cancel cancels the turn", async () => {
    decision = "cancel";
    scriptShell(h.model, "touch cancelled.txt", "call_cancel", true);
    const threadId = await h.startThread();
    const end = await h.runTurn(threadId, "run it");
    assert.equal(end.method, "turn/cancelled");
    assert.equal(fs.existsSync(path.join(h.workspace, "cancelled.txt")), false);
  });

  it("acceptForSession is remembered for the thread's scope key", async () => {
    decision = "acceptForSession";
    const threadId = await h.startThread();
    scriptShell(h.model, "echo one", "call_s1");
    await h.runTurn(threadId, "first");
    decision = "decline"; // would refuse if asked again
    scriptShell(h.model, "echo one", "call_s2");
    const resolvedBefore = h.notifications("item/approval/resolved").length;
    const askedBefore = h.approvals.length;
    const turn2 = await h.startTurn(threadId, "second");
    await h.client.turnEnd(turn2);
    assert.equal(toolResult(h, threadId, "call_s2")!.payload.success, true);
    assert.equal(h.approvals.length, askedBefore, "no new approval was asked");
    const response = itemsOf(h.completedItems(threadId), "approvalResponse").at(-1)!;
    assert.equal(response.payload.source, "sessionGrant");
    // Subscribers still hear how it was decided.
    const resolved = h.notifications("item/approval/resolved").slice(resolvedBefore);
    assert.equal(resolved.length, 1);
    assert.deepEqual(
      [resolved[0]!.turnId, resolved[0]!.itemId, resolved[0]!.requestId, resolved[0]!.decision, resolved[0]!.source],
      [turn2, response.id, response.payload.requestId, "acceptForSession", "sessionGrant"],
    );
    // The grant is for that exact command: another one is asked again (and declined).
    scriptShell(h.model, "echo one; touch other.txt", "call_s3");
    await h.runTurn(threadId, "third");
    assert.equal(h.approvals.length, askedBefore + 1);
    assert.equal(toolResult(h, threadId, "call_s3")!.payload.success, false);
  });
});

describe("approval fallbacks", () => {
  let model: ModelScript;
  before(async () => {
    model = await ModelScript.start();
  });
  afterEach(() => model.assertConsumed());
  after(() => model.fake.close());

  it("a client without approvalSupport gets the policy's decline", async () => {
    // A handler is installed (it records, and would accept), but the client declares it cannot approve.
    const h = await startTypedHarness({ model, capabilities: { approvalSupport: false }, onApproval: () => "accept" });
    try {
      scriptShell(model, "touch nope.txt", "call_noapproval");
      const threadId = await h.startThread();
      assert.equal((await h.runTurn(threadId, "run")).method, "turn/completed");
      assert.equal(h.approvals.length, 0);
      assert.equal(toolResult(h, threadId, "call_noapproval")!.payload.success, false);
      assert.equal(fs.existsSync(path.join(h.workspace, "nope.txt")), false);
      const resolved = await h.notification("item/approval/resolved", (p) => p.threadId === threadId);
      assert.deepEqual([resolved.decision, resolved.source], ["decline", "policy"]);
    } finally {
      await h.close();
    }
  });

  it("an unanswered request times out into the policy, and interrupt policy cancels the turn", async () => {
    const manual = new ManualApprovals();
    const h = await startTypedHarness({ model, args: ["--approval-timeout-ms", "300"], onApproval: manual.handler });
    try {
      scriptShell(model, "touch late.txt", "call_timeout", true);
      const threadId = await h.startThread({ configuration: { approvalPolicy: "interrupt" } });
      const turnId = await h.startTurn(threadId, "run");
      const pending = await manual.next(); // asked, and deliberately never answered
      assert.equal(pending.request.threadId, threadId);
      const end = await h.client.turnEnd(turnId);
      assert.equal(end.method, "turn/cancelled");
      const resolved = await h.notification("item/approval/resolved", (p) => p.threadId === threadId);
      assert.deepEqual([resolved.decision, resolved.source], ["cancel", "timeout"]);
    } finally {
      await h.close();
    }
  });

  it("autoApprove runs without asking", async () => {
    const h = await startTypedHarness({ model });
    try {
      scriptShell(model, "touch auto.txt", "call_auto");
      const threadId = await h.startThread({ configuration: { approvalPolicy: "autoApprove" } });
      assert.equal((await h.runTurn(threadId, "run")).method, "turn/completed");
      assert.equal(h.approvals.length, 0);
      assert.ok(fs.existsSync(path.join(h.workspace, "auto.txt")));
    } finally {
      await h.close();
    }
  });

  it("acceptAlways persists across a restart", async () => {
    const first = await startTypedHarness({ model, onApproval: () => "acceptAlways" });
    let threadId: string;
    try {
      scriptShell(model, "echo always", "call_always1");
      threadId = await first.startThread();
      await first.runTurn(threadId, "run");
      assert.equal(first.approvals.length, 1);
    } finally {
      await first.close();
    }

    const second = await startTypedHarness({ model, dataDir: first.dataDir, onApproval: () => "decline" });
    try {
      await second.client.request("thread/resume", { threadId });
      scriptShell(model, "echo always", "call_always2");
      await second.runTurn(threadId, "again");
      assert.equal(second.approvals.length, 0);
      assert.equal(toolResult(second, threadId, "call_always2")!.payload.success, true);
      const resolved = await second.notification("item/approval/resolved", (p) => p.threadId === threadId);
      assert.deepEqual([resolved.decision, resolved.source], ["acceptAlways", "rule"]);
    } finally {
      await second.close();
    }
  });
});
