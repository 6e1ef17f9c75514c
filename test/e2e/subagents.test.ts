// Subagents over a real server: profile management, and the model handing a task to a subagent
// that works in a child thread (linked, visible, its approvals put to the parent's client).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startHarness, text, type Harness } from "../support/harness.js";

type Entry = { name: string; isBuiltIn: boolean; hasWorkspaceOverride: boolean; enabled: boolean; definition: { description: string } };
type Body = { messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string } }> };

describe("subagents", () => {
  let h: Harness;
  const approvals: Array<Record<string, unknown>> = [];
  before(async () => {
    h = await startHarness();
    h.client.handle("item/approval/request", (params) => {
      approvals.push(params as Record<string, unknown>);
      return { decision: "accept" };
    });
  });
  after(() => h.close());

  const call = (method: string, params: Record<string, unknown> = {}) => h.client.call(method, { workspacePath: h.workspace, ...params });
  const request = (method: string, params: Record<string, unknown> = {}) =>
    h.client.request(method, { workspacePath: h.workspace, ...params });
  const names = async () => ((await call("subagent/profiles/list")).profiles as Entry[]).map((p) => p.name);

  it("lists the built-in profiles and manages the workspace's", async () => {
    const listed = await call("subagent/profiles/list");
    assert.equal(listed.defaultName, "general");
    assert.deepEqual(await names(), ["general", "explorer"]);

    const changed = h.client.notification("workspace/configChanged", (p) => p.source === "subagent/profiles/upsert");
    const reviewer = (await call("subagent/profiles/upsert", {
      name: "reviewer",
      definition: { runtime: "native", description: "Reviews code.", systemPrompt: "You review code.", tools: ["read_file"] },
    })) as Entry;
    assert.equal(reviewer.isBuiltIn, false);
    assert.deepEqual((await changed).regions, ["subagent"]);
    assert.deepEqual(await names(), ["general", "explorer", "reviewer"]);

    assert.equal((await request("subagent/profiles/setEnabled", { name: "general", enabled: false })).error?.code, -32085);
    assert.equal((await request("subagent/profiles/remove", { name: "explorer" })).error?.code, -32083);
    assert.equal(
      (await request("subagent/profiles/upsert", { name: "../x", definition: { runtime: "native", description: "x" } })).error?.code,
      -32084,
    );

    const override = (await call("subagent/profiles/upsert", {
      name: "explorer",
      definition: { runtime: "native", description: "Our explorer." },
    })) as Entry;
    assert.equal(override.hasWorkspaceOverride, true);
    await call("subagent/profiles/remove", { name: "explorer" });
    const restored = ((await call("subagent/profiles/list")).profiles as Entry[]).find((p) => p.name === "explorer")!;
    assert.equal(restored.hasWorkspaceOverride, false);
    assert.match(restored.definition.description, /changes nothing/);

    const disabled = (await call("subagent/profiles/setEnabled", { name: "explorer", enabled: false })) as Entry;
    assert.equal(disabled.enabled, false);
    await call("subagent/profiles/setEnabled", { name: "explorer", enabled: true });
    assert.deepEqual(await call("subagent/settings/update", { model: "small-model" }), { model: "small-model" });
    assert.deepEqual(await call("subagent/settings/update", { model: null }), { model: null });
  });

  it("the model hands a task to a subagent in a child thread and gets its answer", async () => {
    const parentId = await h.startThread();
    h.fake.enqueue(
      {
        kind: "response",
        toolCalls: [{ name: "run_subagent", arguments: { task: "Check the docs.", profile: "reviewer", name: "docs check" } }],
      },
      { kind: "response", text: "CHILD-ANSWER" },
      { kind: "response", text: "Parent done." },
    );
    const from = h.fake.requests.length;
    const started = h.client.notification(
      "thread/started",
      (p) => (p.thread as { metadata?: { parentThreadId?: string } }).metadata?.parentThreadId === parentId,
    );
    const turn = (await h.client.call("turn/start", { threadId: parentId, input: text("delegate") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(parentId, turn.id)).method, "turn/completed");

    const child = (await started).thread as { id: string; displayName: string; originChannel: string };
    assert.equal(child.displayName, "docs check");
    assert.equal(child.originChannel, "subagent");
    const [, childRequest, parentAgain] = h.fake.requests.slice(from).map((r) => r.body as Body);
    assert.equal(childRequest!.messages.at(-1)?.content, "You review code.\n\nTask: Check the docs.");
    assert.deepEqual(
      childRequest!.tools?.map((t) => t.function.name),
      ["read_file"],
      "the profile's tools only",
    );
    const toolResult = parentAgain!.messages.find((m) => m.role === "tool");
    assert.match(String(toolResult?.content), new RegExp(`^CHILD-ANSWER\\n\\n\\[subagent thread ${child.id}\\]$`));
  });

  it("a subagent's approvals go to the client following the parent thread", async () => {
    const parentId = await h.startThread();
    h.fake.enqueue(
      { kind: "response", toolCalls: [{ name: "run_subagent", arguments: { task: "Say hi in the shell." } }] },
      { kind: "response", toolCalls: [{ name: "bash", arguments: { command: "echo hi-from-child" } }] },
      { kind: "response", text: "said hi" },
      { kind: "response", text: "ok" },
    );
    const turn = (await h.client.call("turn/start", { threadId: parentId, input: text("delegate a command") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(parentId, turn.id)).method, "turn/completed");
    const asked = approvals.at(-1)!;
    assert.notEqual(asked.threadId, parentId, "asked for the child thread");
    assert.match(String(asked.operation), /echo hi-from-child/);
    const childTools = (h.fake.requests.at(-2)!.body as Body).messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    assert.ok(
      childTools.some((c) => c.includes("hi-from-child")),
      "the approved command ran",
    );
  });
});
