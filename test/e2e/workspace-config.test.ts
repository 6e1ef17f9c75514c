// workspace/config/update over a real server: the workspace's defaults reach its threads' next
// turns (model, approval policy), a thread's own configuration still wins, changes are announced.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { ScriptStep } from "../support/fake-model-server.js";
import { startHarness, text, type Harness } from "../support/harness.js";

describe("workspace configuration", () => {
  let h: Harness;
  let asked = 0;
  before(async () => {
    h = await startHarness();
    h.client.handle("item/approval/request", () => {
      asked += 1;
      return { decision: "accept" };
    });
  });
  after(() => h.close());

  const update = (params: Record<string, unknown>) =>
    h.client.request("workspace/config/update", { workspacePath: h.workspace, ...params });
  async function runTurn(threadId: string, ...steps: ScriptStep[]): Promise<void> {
    h.fake.enqueue(...steps);
    const turn = (await h.client.call("turn/start", { threadId, input: text("go") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");
  }

  it("sets the model of threads that name none; a thread's own model wins", async () => {
    assert.equal((await update({})).error?.code, -32602);
    const changed = h.client.notification("workspace/configChanged", (p) => p.source === "workspace/config/update");
    const result = (await update({ model: "workspace-model" })).result;
    assert.deepEqual(result, { providerId: null, model: "workspace-model", defaultApprovalPolicy: null });
    assert.deepEqual((await changed).regions, ["workspace.model"]);
    assert.equal(JSON.parse(fs.readFileSync(path.join(h.workspace, ".craft/config.json"), "utf8")).model, "workspace-model");

    await runTurn(await h.startThread(), { kind: "response", text: "a" });
    assert.equal(h.fake.requests.at(-1)!.body.model, "workspace-model");
    await runTurn(await h.startThread({ configuration: { model: "thread-model" } }), { kind: "response", text: "b" });
    assert.equal(h.fake.requests.at(-1)!.body.model, "thread-model");

    assert.equal((await update({ model: null })).result?.model, null);
  });

  it("sets the approval policy of threads that set none", async () => {
    const threadId = await h.startThread();
    const command: ScriptStep = { kind: "response", toolCalls: [{ name: "bash", arguments: { command: "echo ok" } }] };
    await update({ defaultApprovalPolicy: "autoApprove" });
    await runTurn(threadId, command, { kind: "response", text: "done" });
    assert.equal(asked, 0, "not asked under the workspace's autoApprove");

    await update({ defaultApprovalPolicy: null });
    await runTurn(threadId, command, { kind: "response", text: "done" });
    assert.equal(asked, 1, "asked again once the default is removed");
  });

  it("describes what it can change", async () => {
    const { sections } = (await h.client.call("workspace/config/schema", {})) as { sections: Array<{ fields: Array<{ key: string }> }> };
    assert.deepEqual(
      sections[0]!.fields.map((f) => f.key),
      ["ProviderId", "Model", "DefaultApprovalPolicy"],
    );
  });
});
