// AgentCraft agents with real processes: a switchyard-backed agent (`switchyard acp`, talking to
// the fake model server) started, prompted and stopped through the CLI, its session a runtime
// thread other faces see; print-mode and one-shot runs; acp-service restarts with backoff; and
// a daemon killed outright, then reconciled on its next start.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { pidAlive } from "../../src/pid.js";
import { spawn } from "node:child_process";
import { AGENTCRAFT_CLI, AgentCraftHome, eventually, template } from "../support/agentcraft.js";
import { FakeModelServer } from "../support/fake-model-server.js";
import { modelEnv } from "../support/harness.js";
import { FULL_CAPABILITIES, TestClient } from "../support/test-client.js";

describe("agentcraft agents", () => {
  let fake: FakeModelServer;
  let home: AgentCraftHome;
  before(async () => {
    fake = await FakeModelServer.start();
    home = new AgentCraftHome(modelEnv(fake));
    home.config("skills", { name: "haiku", content: "Always answer in exactly three lines." });
    home.config("templates", template("poet", { domainContext: { skills: ["haiku"] } }));
    home.config("templates", template("service", { launchMode: "acp-service" }));
    await home.startDaemon("--listen", "ws://127.0.0.1:0");
  });
  after(async () => {
    await home.stop();
    await fake.close();
  });

  it("starts an agent, prompts it, shows its session as a thread to AppServer clients, and stops it", async () => {
    assert.equal((await home.cli("agent", "create", "bard", "-t", "poet")).code, 0);
    const started = await home.cli("agent", "start", "bard", "-f", "json");
    assert.equal(started.code, 0, started.stderr);
    const meta = JSON.parse(started.stdout);
    assert.equal(meta.status, "running");
    assert.equal(meta.processOwnership, "managed");
    assert.ok(pidAlive(meta.pid), "the agent's process runs");
    assert.match((await home.cli("agent", "start", "bard")).stderr, /AGENT_ALREADY_RUNNING \(-32004\)/);

    fake.enqueue({ kind: "response", text: ["Autumn ", "moon ", "rises"] });
    const prompted = await home.cli("agent", "prompt", "bard", "-m", "write a haiku", "--format", "json");
    assert.equal(prompted.code, 0, prompted.stderr);
    const answer = JSON.parse(prompted.stdout);
    assert.equal(answer.response, "Autumn moon rises");
    assert.equal(answer.sessionId, meta.threadId);
    // The instance's context files reach the model.
    const system = JSON.stringify(fake.requests.at(-1)!.body.messages[0]);
    assert.match(system, /Always answer in exactly three lines/);

    // The same session, from the AppServer face of the same daemon.
    const url = String((await home.daemon!.waitForLog((l) => l.msg === "listening")).url);
    const watcher = await TestClient.overWebSocket(url);
    await watcher.initialize(FULL_CAPABILITIES);
    const list = await watcher.call("thread/list", {});
    const thread = (list.data as Array<{ id: string; workspacePath: string }>).find((t) => t.id === meta.threadId);
    assert.equal(thread?.workspacePath, path.join(home.home, "instances", "bard"));
    await watcher.call("thread/subscribe", { threadId: meta.threadId });
    fake.enqueue({ kind: "response", text: ["Second ", "verse"] });
    const second = await home.cli("agent", "prompt", "bard", "-m", "again");
    assert.equal(second.stdout.trim(), "Second verse");
    await watcher.waitFor((m) => m.method === "item/agentMessage/delta" && m.params?.delta === "verse");
    watcher.close();

    const stopped = JSON.parse((await home.cli("agent", "stop", "bard", "-f", "json")).stdout);
    assert.equal(stopped.status, "stopped");
    await eventually(async () => (pidAlive(meta.pid) ? undefined : true), "the agent's process to end");
    assert.match((await home.cli("agent", "prompt", "bard", "-m", "hello")).stderr, /AGENT_NOT_ATTACHED \(-32010\)/);
  });

  it("chats in the terminal with the answer streamed, starting the agent for the chat and stopping it after", async () => {
    assert.equal((await home.cli("agent", "create", "talker", "-t", "poet")).code, 0);
    fake.enqueue({ kind: "response", text: ["Hi ", "there, ", "human"] });
    const chat = spawn(process.execPath, [AGENTCRAFT_CLI, "agent", "chat", "talker"], { env: home.processEnv() });
    let stdout = "";
    chat.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      // The first prompt is up once the session is: say hello, then leave after the answer.
      if (c.includes("Type exit to leave")) chat.stdin.write("hello\n");
      if (stdout.includes("human")) chat.stdin.end("exit\n");
    });
    const code = await new Promise((resolve) => chat.once("exit", resolve));
    assert.equal(code, 0);
    assert.match(stdout, /Chatting with talker \(session lease_/);
    assert.match(stdout, /Hi there, human/);
    assert.equal(home.meta("talker").status, "stopped", "started for the chat, stopped after it");
  });

  it("serves the legacy proxy methods: connect, forward a session/prompt and a cancel, disconnect", async () => {
    assert.equal((await home.cli("agent", "create", "legacy", "-t", "poet")).code, 0);
    assert.equal((await home.cli("agent", "start", "legacy")).code, 0);
    const updates: unknown[] = [];
    const client = await home.client({ onNotification: (_method, params) => void updates.push(params) });
    try {
      const { sessionId } = await client.call("proxy.connect", { agentName: "legacy" });
      fake.enqueue({ kind: "response", text: "legacy answer" });
      const answer = await client.call("proxy.forward", {
        sessionId,
        acpMessage: { jsonrpc: "2.0", id: 7, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "hi" }] } },
      });
      assert.deepEqual(answer, { jsonrpc: "2.0", id: 7, result: { stopReason: "end_turn" } });
      assert.ok(updates.length > 0, "the session's updates came as session.update");
      await assert.rejects(client.call("proxy.forward", { sessionId, acpMessage: { method: "fs/read_text_file" } }), { code: -32000 });
      await assert.rejects(client.call("proxy.envCallback", { sessionId, response: {} }), /not implemented/);
      assert.deepEqual(await client.call("proxy.disconnect", { sessionId }), { ok: true });
      assert.deepEqual(await client.call("session.list", { agentName: "legacy" }), []);
    } finally {
      client.close();
      await home.cli("agent", "stop", "legacy");
    }
  });

  it("runs a prompt in print mode on an agent that is not started, and continues its session", async () => {
    assert.equal((await home.cli("agent", "create", "scribe", "-t", "poet")).code, 0);
    fake.enqueue({ kind: "response", text: "printed answer" });
    const run = await home.cli("agent", "run", "scribe", "--prompt", "say something", "--format", "json");
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout);
    assert.equal(result.text, "printed answer");
    fake.enqueue({ kind: "response", text: "continued" });
    const next = await home.cli("agent", "run", "scribe", "--prompt", "and more", "--session-id", result.sessionId);
    assert.equal(next.stdout.trim(), "continued");
    // The model saw the first exchange: the session continued.
    assert.match(JSON.stringify(fake.requests.at(-1)!.body.messages), /printed answer/);
    assert.equal(home.meta("scribe").status, "created", "print mode does not start the agent");
  });

  it("runs a template one-shot in an ephemeral instance that is cleaned up", async () => {
    const client = await home.client();
    try {
      fake.enqueue({ kind: "response", text: "one-shot done" });
      const result = (await client.call("agent.run", { template: "poet", prompt: "do it" })) as { response: string; instanceName: string };
      assert.equal(result.response, "one-shot done");
      assert.match(result.instanceName, /^poet-run-/);
      assert.ok(!existsSync(path.join(home.home, "instances", result.instanceName)), "cleaned up");
      await assert.rejects(client.call("agent.run", { template: "nope", prompt: "x" }), { code: -32001 });
    } finally {
      client.close();
    }
  });

  it("restarts an acp-service agent killed three times, each time after a longer delay", async () => {
    assert.equal((await home.cli("agent", "create", "svc", "-t", "service")).code, 0);
    let pid = JSON.parse((await home.cli("agent", "start", "svc", "-f", "json")).stdout).pid as number;
    const delays: string[] = [];
    for (let i = 0; i < 3; i++) {
      process.kill(pid, "SIGKILL");
      const restarted = await eventually(
        async () => {
          const meta = home.meta("svc");
          return meta.status === "running" && meta.pid !== pid ? meta : undefined;
        },
        `restart ${i + 1}`,
      );
      delays.push((restarted.metadata as Record<string, string>).lastRestartDelayMs!);
      pid = restarted.pid as number;
    }
    assert.deepEqual(delays, ["1000", "2000", "4000"]);
    assert.equal(home.daemon!.logs().filter((l) => l.msg === "acp-service agent exited; restarting it").length, 3);
  });
});

describe("agentcraft daemon restart", () => {
  it("after a kill -9, restarts acp-service agents and marks the others stopped", async () => {
    const fake = await FakeModelServer.start();
    const home = new AgentCraftHome(modelEnv(fake));
    home.config("templates", template("service", { launchMode: "acp-service" }));
    home.config("templates", template("plain"));
    try {
      await home.startDaemon();
      for (const [name, tpl] of [
        ["always", "service"],
        ["sometimes", "plain"],
      ]) {
        assert.equal((await home.cli("agent", "create", name!, "-t", tpl!)).code, 0);
        assert.equal((await home.cli("agent", "start", name!)).code, 0);
      }
      const oldPid = home.meta("always").pid as number;
      home.daemon!.child.kill("SIGKILL");
      await home.daemon!.exited;

      await home.startDaemon();
      const always = home.meta("always");
      assert.equal(always.status, "running");
      assert.notEqual(always.pid, oldPid);
      assert.equal(home.meta("sometimes").status, "stopped");
      // The previous daemon's agent processes were reaped at start-up.
      await eventually(async () => (pidAlive(oldPid) ? undefined : true), "the old agent process to be gone");
      fake.enqueue({ kind: "response", text: "back again" });
      assert.equal((await home.cli("agent", "prompt", "always", "-m", "are you there?")).stdout.trim(), "back again");
      assert.ok(readFileSync(path.join(home.home, "daemon.pid"), "utf8").trim() === String(home.daemon!.child.pid));
    } finally {
      await home.stop();
      await fake.close();
    }
  });
});
