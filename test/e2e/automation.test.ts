// Scheduled prompts and the heartbeat over a real server: the agent schedules a prompt with its
// tool, it runs as a turn when due (with no client asking), cron/* manage it, it survives a
// restart; heartbeat/trigger runs HEARTBEAT.md, and the periodic heartbeat runs by itself.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { startHarness, text, type Harness } from "../support/harness.js";

type Job = {
  id: string;
  name: string;
  enabled: boolean;
  threadId: string;
  state: { lastStatus: string | null; lastResult: string | null };
};
type Body = { messages: Array<{ role: string; content: unknown }> };

describe("scheduled prompts and the heartbeat", () => {
  let fake: FakeModelServer;
  let h: Harness;
  before(async () => {
    fake = await FakeModelServer.start();
    h = await startHarness({ fake });
  });
  after(async () => {
    await h.close();
    await fake.close();
  });

  async function agentSchedules(threadId: string, args: Record<string, unknown>): Promise<Job> {
    const created = h.client.notification("cron/stateChanged", (p) => !p.removed && (p.job as Job).name === args.name);
    fake.enqueue({ kind: "response", toolCalls: [{ name: "schedule_prompt", arguments: args }] }, { kind: "response", text: "Scheduled." });
    const turn = (await h.client.call("turn/start", { threadId, input: text("schedule it") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");
    return (await created).job as Job;
  }

  it("the agent schedules a prompt; it runs on its thread when due, and a one-off job then goes", async () => {
    const threadId = await h.startThread();
    const ran = h.client.notification("system/jobResult", (p) => p.source === "cron");
    const removed = h.client.notification("cron/stateChanged", (p) => p.removed === true);
    const job = await agentSchedules(threadId, { name: "soon", prompt: "PING-PROMPT", at: new Date(Date.now() + 300).toISOString() });
    assert.equal(job.threadId, threadId);
    fake.enqueue({ kind: "response", text: "PONG" });

    const result = await ran;
    assert.equal(result.result, "PONG");
    assert.equal(result.threadId, threadId);
    const request = fake.requests.at(-1)!.body as Body;
    assert.equal(request.messages.at(-1)?.content, "PING-PROMPT");
    assert.equal(((await removed).job as Job).id, job.id, "an at-job is removed after it ran");
  });

  it("cron/list, cron/enable, cron/run and cron/remove manage a job; it survives a restart", async () => {
    const threadId = await h.startThread();
    const job = await agentSchedules(threadId, { name: "hourly", prompt: "HOURLY-CHECK", every_minutes: 60 });
    const listed = async (harness: Harness, includeDisabled?: boolean) =>
      ((await harness.client.call("cron/list", includeDisabled === undefined ? {} : { includeDisabled })).jobs as Job[]).map((j) => j.id);
    assert.ok((await listed(h)).includes(job.id));

    assert.equal(((await h.client.call("cron/enable", { jobId: job.id, enabled: false })).job as Job).enabled, false);
    assert.ok(!(await listed(h)).includes(job.id));
    assert.ok((await listed(h, true)).includes(job.id));

    const ran = h.client.notification("system/jobResult", (p) => p.jobId === job.id);
    const updated = h.client.notification(
      "cron/stateChanged",
      (p) => (p.job as Job).id === job.id && (p.job as Job).state.lastStatus === "ok",
    );
    fake.enqueue({ kind: "response", text: "all good" });
    assert.equal((await h.client.call("cron/run", { jobId: job.id })).queued, true);
    assert.equal((await ran).result, "all good");
    assert.equal(((await updated).job as Job).state.lastResult, "all good");

    // A restarted server still has the job (the data directory is the first server's, stopped).
    await h.close();
    h = await startHarness({ fake, dataDir: h.server.dataDir });
    assert.ok((await listed(h, true)).includes(job.id));

    assert.deepEqual(await h.client.call("cron/remove", { jobId: job.id }), { removed: true });
    assert.equal((await h.client.request("cron/remove", { jobId: job.id })).error?.code, -32031);
  });

  it("refuses a schedule that cannot run, telling the model why", async () => {
    const threadId = await h.startThread();
    fake.enqueue(
      { kind: "response", toolCalls: [{ name: "schedule_prompt", arguments: { name: "bad", prompt: "x", cron: "not a cron" } }] },
      { kind: "response", text: "ok" },
    );
    const turn = (await h.client.call("turn/start", { threadId, input: text("schedule") })).turn as { id: string };
    await h.client.turnEnd(threadId, turn.id);
    const tool = (fake.requests.at(-1)!.body as Body).messages.find((m) => m.role === "tool");
    assert.match(String(tool?.content), /Invalid schedule/);
  });

  it("heartbeat/trigger runs HEARTBEAT.md on the workspace's heartbeat thread", async () => {
    assert.deepEqual(await h.client.call("heartbeat/trigger", { workspacePath: h.workspace }), { result: null, error: null });
    fs.writeFileSync(path.join(h.workspace, "HEARTBEAT.md"), "Check the build.\n");
    fake.enqueue({ kind: "response", text: "HEARTBEAT_OK" }, { kind: "response", text: "HEARTBEAT_OK again" });
    const first = await h.client.call("heartbeat/trigger", { workspacePath: h.workspace });
    assert.equal(first.result, "HEARTBEAT_OK");
    assert.equal((fake.requests.at(-1)!.body as Body).messages.at(-1)?.content, "Check the build.");
    const second = await h.client.call("heartbeat/trigger", { workspacePath: h.workspace });
    assert.equal(second.threadId, first.threadId, "one heartbeat thread per workspace");
    const thread = (await h.client.call("thread/read", { threadId: first.threadId, includeTurns: false })).thread as {
      originChannel: string;
    };
    assert.equal(thread.originChannel, "heartbeat");
  });

  it("the server's workspace configuration makes jobs, once, on its scheduled-prompts thread", async () => {
    const dataDir = fs.mkdtempSync(path.join(path.dirname(h.server.dataDir), "switchyard-cron-"));
    fs.mkdirSync(path.join(dataDir, ".craft"));
    const jobs = [{ name: "configured", prompt: "CONFIG-PROMPT", schedule: { kind: "every", everyMs: 3_600_000 } }];
    fs.writeFileSync(path.join(dataDir, ".craft", "config.json"), JSON.stringify({ cron: { jobs } }));
    const configured = async (harness: Harness) =>
      ((await harness.client.call("cron/list", { includeDisabled: true })).jobs as Array<Job & { source: string }>).filter(
        (j) => j.source === "config",
      );
    let server = await startHarness({ fake, dataDir });
    try {
      const [job] = await configured(server);
      assert.equal(job?.name, "configured");
      const thread = (await server.client.call("thread/read", { threadId: job!.threadId, includeTurns: false })).thread as {
        originChannel: string;
      };
      assert.equal(thread.originChannel, "cron");
      await server.close();
      server = await startHarness({ fake, dataDir });
      assert.equal((await configured(server)).length, 1, "not made again after a restart");
    } finally {
      await server.close();
    }
  });

  it("the server's workspace heartbeat runs by itself when its settings turn it on", async () => {
    // The harness starts servers in their data directory: that is the server's workspace.
    const dataDir = fs.mkdtempSync(path.join(path.dirname(h.server.dataDir), "switchyard-heartbeat-"));
    fs.mkdirSync(path.join(dataDir, ".craft"));
    fs.writeFileSync(path.join(dataDir, ".craft", "config.json"), JSON.stringify({ heartbeat: { enabled: true, intervalMinutes: 0.005 } }));
    fs.writeFileSync(path.join(dataDir, "HEARTBEAT.md"), "Periodic check.");
    fake.enqueue({ kind: "response", text: "periodic ok" });
    const periodic = await startHarness({ fake, dataDir });
    try {
      const result = await periodic.client.notification("system/jobResult", (p) => p.source === "heartbeat");
      assert.equal(result.result, "periodic ok");
    } finally {
      await periodic.close();
    }
  });
});
