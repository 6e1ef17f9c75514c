// The Yeaft relay and agent driver at the wire level, with raw WebSocket clients against real
// processes: users and login, both handshakes and their failures, a conversation streamed as
// claude_output, aliases, routing isolation between users, superseding, and a message that
// waits for an agent that is away.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { WebSocketServer } from "ws";
import { FakeModelServer } from "../support/fake-model-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { freePort, ServerProcess, tempDir } from "../support/server-process.js";
import { addUser, login, type Msg, Peer } from "../support/yeaft.js";

describe("yeaft relay and agent", () => {
  let fake: FakeModelServer;
  let relay: ServerProcess;
  let agent: ServerProcess;
  const dataDir = tempDir("yeaft");
  let port: number;
  let ws: string;
  let aliceSecret: string;
  let aliceToken: string;
  let bobToken: string;
  before(async () => {
    fake = await FakeModelServer.start();
    aliceSecret = await addUser(dataDir, "alice", "alice-password");
    await addUser(dataDir, "bob", "bob-password-1");
    port = await freePort();
    relay = ServerProcess.spawn({ command: ["yeaft", "relay"], args: ["--port", String(port)], dataDir });
    await relay.waitForLog((l) => l.msg === "yeaft relay listening");
    ws = `ws://127.0.0.1:${port}/`;
    const personas = `${dataDir}/personas.json`;
    writeFileSync(
      personas,
      JSON.stringify([
        { name: "ada", description: "reviews", systemPrompt: "You are Ada, a careful reviewer." },
        { name: "linus", systemPrompt: "You are Linus, terse." },
      ]),
    );
    agent = ServerProcess.spawn({
      command: ["yeaft", "agent"],
      args: ["--server", ws, "--secret", aliceSecret, "--name", "laptop", "--personas", personas],
      env: modelEnv(fake),
    });
    await agent.waitForLog((l) => l.msg === "registered with the yeaft relay");
  });
  after(async () => {
    await agent.kill();
    await relay.kill();
    await fake.close();
  });

  it("logs in with a password (scrypt, never stored plain) and refuses a wrong one", async () => {
    const base = `http://127.0.0.1:${port}`;
    assert.equal((await login(base, "alice", "wrong-password")).status, 401);
    const ok = await login(base, "alice", "alice-password");
    assert.equal(ok.status, 200);
    assert.match(String(ok.cookie), /yeaft_session=.*HttpOnly/);
    aliceToken = ok.token!;
    bobToken = (await login(base, "bob", "bob-password-1")).token!;
    const users = (await import("node:fs")).readFileSync(`${dataDir}/yeaft/users.json`, "utf8");
    assert.ok(!users.includes("alice-password"));
  });

  it("refuses a browser without a valid token and an agent with a wrong secret (1008), and a foreign Origin", async () => {
    const anonymous = await Peer.open(`${ws}?type=web`);
    assert.equal((await anonymous.waitFor((m) => m.type === "auth_result")).success, false);
    assert.equal((await anonymous.waitClosed()).code, 1008);
    const impostor = await Peer.open(`${ws}?type=agent&id=x`);
    const challenge = await impostor.waitFor((m) => m.type === "auth_required");
    impostor.send({ type: "auth", tempId: challenge.tempId, secret: "not-a-secret" });
    assert.equal((await impostor.waitClosed()).code, 1008);
    await assert.rejects(Peer.open(`${ws}?type=web&token=${aliceToken}`, { Origin: "https://evil.example" }), /403/);
  });

  it("streams a conversation on the agent as claude_output, ending with a result; `chat` is send_message", async () => {
    const browser = await Peer.open(`${ws}?type=web`, { Authorization: `Bearer ${aliceToken}` });
    const list = await browser.waitFor((m) => m.type === "agent_list");
    const agents = list.agents as Array<{ id: string; name: string; online: boolean }>;
    assert.deepEqual(
      agents.map((a) => [a.name, a.online]),
      [["laptop", true]],
    );
    assert.deepEqual(
      (agents[0] as unknown as { personas: Array<{ name: string }> }).personas.map((p) => p.name),
      ["ada", "linus"],
    );
    browser.send({
      type: "create_conversation",
      agentId: agents[0]!.id,
      conversationId: "c1",
      provider: "switchyard",
      workDir: makeWorkspace(),
    });
    const ready = await browser.waitFor((m) => m.type === "session_ready");
    assert.equal(ready.conversationId, "c1");
    fake.enqueue({ kind: "response", reasoning: ["hmm"], text: ["Hel", "lo ", "there"], usage: { input: 10, output: 5 } });
    browser.send({ type: "chat", conversationId: "c1", prompt: "hi" });
    await browser.waitFor((m) => m.type === "turn_completed" && m.conversationId === "c1");
    const outputs = browser.received.filter((m) => m.type === "claude_output").map((m) => m.data as Record<string, unknown>);
    const texts = outputs
      .filter((d) => d.type === "assistant")
      .flatMap((d) => (d.message as { content: Array<{ type: string; text?: string }> }).content)
      .filter((c) => c.type === "text")
      .map((c) => c.text);
    assert.equal(texts.join(""), "Hello there");
    assert.ok(outputs.some((d) => d.type === "assistant" && JSON.stringify(d).includes('"thinking":"hmm"')));
    const result = outputs.at(-1)!;
    assert.equal(result.type, "result");
    assert.equal(result.subtype, "success");
    assert.deepEqual((result.usage as { input_tokens: number }).input_tokens, 10);
    browser.ws.close();

    // A browser that comes back catches up from the agent's history, after its last seq, without gaps or duplicates.
    const back = await Peer.open(`${ws}?type=web&token=${aliceToken}`);
    const seqs = browser.received.filter((m) => m.type === "claude_output" && typeof m.seq === "number").map((m) => m.seq as number);
    const middle = seqs[Math.floor(seqs.length / 2)]!;
    back.send({ type: "sync_messages", conversationId: "c1", afterSeq: 0 });
    const all = await back.waitFor((m) => m.type === "sync_messages_result");
    const historyText = (all.messages as Array<{ data: { type: string; message?: { content: Array<{ type: string; text?: string }> } } }>)
      .filter((m) => m.data.type === "assistant")
      .flatMap((m) => m.data.message!.content)
      .filter((c) => c.type === "text")
      .map((c) => c.text)
      .join("");
    assert.equal(historyText, "Hello there");
    back.send({ type: "sync_messages", conversationId: "c1", afterSeq: middle });
    const rest = await back.waitFor((m) => m.type === "sync_messages_result" && m !== all);
    assert.equal(rest.afterSeq, middle, "the answer says which catch-up it answers");
    const restSeqs = (rest.messages as Array<{ seq: number }>).map((m) => m.seq);
    assert.deepEqual(
      restSeqs,
      seqs.filter((s) => s > middle),
    );
    back.ws.close();
  });

  it("asks the browser before a shell command, runs it when allowed, and lists, resumes and groups conversations", async () => {
    const browser = await Peer.open(`${ws}?type=web&token=${aliceToken}`);
    const list = await browser.waitFor((m) => m.type === "agent_list");
    const agentId = (list.agents as Array<{ id: string }>)[0]!.id;
    const workDir = makeWorkspace();
    browser.send({ type: "create_conversation", agentId, conversationId: "c2", provider: "switchyard", workDir });
    const ready = await browser.waitFor((m) => m.type === "session_ready" && m.conversationId === "c2");
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "call_1", name: "bash", arguments: { command: "echo asked > asked.txt" } }] },
      { kind: "response", text: "done" },
    );
    browser.send({ type: "send_message", conversationId: "c2", text: "write the file" });
    const question = await browser.waitFor((m) => m.type === "ask_user_question" && m.conversationId === "c2");
    assert.deepEqual(question.choices, ["Allow", "Deny"]);
    assert.match(String(question.prompt), /echo asked > asked\.txt/);
    browser.send({ type: "ask_user_answer", conversationId: "c2", requestId: question.requestId, answer: "Allow" });
    await browser.waitFor((m) => m.type === "turn_completed" && m.conversationId === "c2");
    assert.equal((await import("node:fs")).readFileSync(`${workDir}/asked.txt`, "utf8"), "asked\n");

    // The built-in ask_user tool: the model's question, with its choices; the answer is the tool's result.
    fake.enqueue(
      {
        kind: "response",
        toolCalls: [{ id: "call_q", name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } }],
      },
      { kind: "response", text: "Blue it is." },
    );
    browser.send({ type: "send_message", conversationId: "c2", text: "paint it" });
    const asked = await browser.waitFor((m) => m.type === "ask_user_question" && m.prompt === "Which colour?");
    assert.deepEqual([asked.choices, asked.multiSelect], [["red", "blue"], false]);
    browser.send({ type: "ask_user_answer", conversationId: "c2", requestId: asked.requestId, answer: "blue" });
    await browser.waitFor(
      (m) => m.type === "turn_completed" && m.conversationId === "c2" && browser.received.indexOf(m) > browser.received.indexOf(asked),
    );
    const toolResult = (fake.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>).findLast((m) => m.role === "tool");
    assert.equal(toolResult?.content, "blue");

    browser.send({ type: "list_folders", agentId, provider: "switchyard", conversationId: "c2" });
    const folders = await browser.waitFor((m) => m.type === "folders_list");
    assert.ok((folders.folders as string[]).includes(workDir));
    browser.send({ type: "list_history_sessions", conversationId: "c2", workDir });
    const history = await browser.waitFor((m) => m.type === "history_sessions_list");
    assert.deepEqual(
      (history.sessions as Array<{ sessionId: string }>).map((x) => x.sessionId),
      [ready.sessionId],
    );

    // Group chat: both personas answer, in parallel, each tagged, each with its own system prompt.
    fake.enqueue({ kind: "response", text: "first" }, { kind: "response", text: "second" });
    browser.send({ type: "unify_group_chat", agentId, groupId: "g1", text: "ideas?", mentions: [] });
    await browser.waitFor((m) => m.type === "turn_completed" && m.groupId === "g1");
    const lanes = browser.received.filter((m) => m.type === "yeaft_output" && m.groupId === "g1");
    assert.deepEqual([...new Set(lanes.map((m) => m.persona))].sort(), ["ada", "linus"]);
    assert.equal(lanes.filter((m) => (m.data as { type: string }).type === "result").length, 2);
    const systems = fake.requests.slice(-2).map((r) => JSON.stringify(r.body.messages[0]));
    assert.ok(systems.some((x) => x.includes("You are Ada")) && systems.some((x) => x.includes("You are Linus")));
    browser.send({ type: "yeaft_session_chat", groupId: "g1", text: "just you", mentions: ["nobody"] });
    assert.equal((await browser.waitFor((m) => m.type === "error" && m.groupId === "g1")).code, "persona_not_found");
    browser.ws.close();
  });

  it("keeps users apart, answers unknown types with an error envelope, and keeps the connection", async () => {
    const bob = await Peer.open(`${ws}?type=web&token=${bobToken}`);
    const bobList = await bob.waitFor((m) => m.type === "agent_list");
    assert.deepEqual(bobList.agents, [], "alice's agent is not bob's");
    bob.send({ type: "send_message", conversationId: "c1", text: "let me in" });
    assert.equal((await bob.waitFor((m) => m.type === "error")).code, "conversation_not_found");
    bob.send({ type: "teleport" });
    assert.equal((await bob.waitFor((m) => m.type === "error" && m.code === "unknown_type")).code, "unknown_type");
    bob.send({ type: "get_agents" });
    await bob.waitFor((m) => m.type === "agent_list" && m !== bobList);
    assert.equal(bob.closed, undefined);
    bob.ws.close();
  });

  it("supersedes an older connection of the same agent, and keeps messages for an agent that is away", async () => {
    const browser = await Peer.open(`${ws}?type=web&token=${aliceToken}`);
    await browser.waitFor((m) => m.type === "agent_list");
    // A second connection with the agent's id takes over; the driver's is closed with 1008.
    const twin = await Peer.open(`${ws}?type=agent&id=twin`);
    const challenge = await twin.waitFor((m) => m.type === "auth_required");
    twin.send({ type: "auth", tempId: challenge.tempId, secret: aliceSecret });
    await twin.waitFor((m) => m.type === "registered");
    const twin2 = await Peer.open(`${ws}?type=agent&id=twin`);
    const challenge2 = await twin2.waitFor((m) => m.type === "auth_required");
    twin2.send({ type: "auth", tempId: challenge2.tempId, secret: aliceSecret });
    await twin2.waitFor((m) => m.type === "registered");
    assert.equal((await twin.waitClosed()).code, 1008);

    // The conversation's agent goes away; a message waits for it and arrives when it is back.
    const agentId = twin2.received.find((m) => m.type === "registered")!.agentId as string;
    browser.send({ type: "create_conversation", agentId, conversationId: "c-away", provider: "switchyard" });
    await twin2.waitFor((m) => m.type === "create_conversation");
    twin2.ws.close();
    await browser.waitFor(
      (m) => m.type === "agent_list" && (m.agents as Array<{ id: string; online: boolean }>).some((a) => a.id === agentId && !a.online),
    );
    browser.send({ type: "send_message", conversationId: "c-away", text: "are you there?" });
    const status = await browser.waitFor((m) => m.type === "agent_status" && m.agentId === agentId);
    assert.equal(status.queued, 1);
    // Past the bound (5,000 messages) the oldest non-terminal ones go first, and the browser is told.
    browser.send({ type: "cancel_execution", conversationId: "c-away" });
    for (let i = 0; i < 5_000; i++) browser.send({ type: "send_message", conversationId: "c-away", text: `m${i}` });
    const drops = () => browser.received.filter((m) => m.type === "agent_status" && m.dropped === 1);
    // Each message is queued in its own transaction, in order: on PostgreSQL the 5,000 took 8 s
    // here, and past waitFor's usual 15 s with other test runs sharing the machine.
    const FLOOD_MS = 60_000;
    await browser.waitFor(() => drops().length === 2, FLOOD_MS);
    assert.ok(drops().every((m) => m.queued === 5_000 && /dropped/.test(String(m.message))));
    const back = await Peer.open(`${ws}?type=agent&id=twin`);
    const challenge3 = await back.waitFor((m) => m.type === "auth_required");
    back.send({ type: "auth", tempId: challenge3.tempId, secret: aliceSecret });
    await back.waitFor((m) => m.type === "send_message" && m.text === "m4999", FLOOD_MS);
    const flushed = back.received.filter((m) => m.type === "send_message" || m.type === "cancel_execution");
    // The terminal cancel kept its place; "are you there?" and m0 were the oldest others; order kept.
    assert.deepEqual(
      flushed.map((m) => (m.type === "cancel_execution" ? "cancel" : m.text)),
      ["cancel", ...Array.from({ length: 4_999 }, (_, i) => `m${i + 1}`)],
    );
    // An agent speaks only for its own conversations.
    back.send({ type: "claude_output", conversationId: "c1", data: { type: "assistant" } });
    assert.equal((await back.waitFor((m) => m.type === "error")).code, "not_your_conversation");
    back.ws.close();
    browser.ws.close();
  });
});

describe("yeaft heartbeats", () => {
  it("the relay cuts off a peer that answers no ping, and keeps one that does", async () => {
    const port = await freePort();
    const relay = ServerProcess.spawn({
      command: ["yeaft", "relay"],
      args: ["--port", String(port), "--ping-interval-ms", "100", "--dead-after-ms", "400"],
    });
    try {
      await relay.waitForLog((l) => l.msg === "yeaft relay listening");
      const silent = await Peer.open(`ws://127.0.0.1:${port}/?type=agent&id=silent`, {}, { autoPong: false });
      const lively = await Peer.open(`ws://127.0.0.1:${port}/?type=agent&id=lively`);
      await silent.waitFor((m) => m.type === "auth_required");
      const started = Date.now();
      assert.equal((await silent.waitClosed()).code, 1006, "terminated, no close handshake");
      assert.ok(Date.now() - started >= 300, "not before it was silent for the limit");
      assert.equal(lively.closed, undefined);
      lively.ws.close();
    } finally {
      await relay.kill();
    }
  });

  it("the agent drops a relay that stops answering and connects again", async () => {
    // A relay that registers the agent and then never answers a ping.
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", autoPong: false });
    let connections = 0;
    const second = new Promise<void>((resolve) =>
      wss.on("connection", (ws) => {
        if (++connections === 2) resolve();
        ws.on("message", (raw) => {
          const msg = JSON.parse(raw.toString()) as Msg;
          if (msg.type === "auth") ws.send(JSON.stringify({ type: "registered", agentId: "u:a" }));
        });
        ws.send(JSON.stringify({ type: "auth_required", tempId: "t" }));
      }),
    );
    await new Promise((resolve) => wss.once("listening", resolve));
    const { port } = wss.address() as { port: number };
    const agent = ServerProcess.spawn({
      command: ["yeaft", "agent"],
      args: ["--server", `ws://127.0.0.1:${port}/`, "--secret", "s", "--ping-interval-ms", "100", "--dead-after-ms", "400"],
    });
    try {
      await second;
      await agent.waitForLog((l) => l.msg === "the relay stopped answering; reconnecting");
    } finally {
      await agent.kill();
      wss.close();
    }
  });
});

describe("yeaft user add", () => {
  it("refuses a short password with a clear message and a non-zero exit", async () => {
    await assert.rejects(addUser(tempDir("yeaft-users"), "carol", "short"), /exited 1/);
  });

  it("refuses to bind a non-loopback address without a signing secret", async () => {
    const relay = ServerProcess.spawn({
      command: ["yeaft", "relay"],
      args: ["--host", "0.0.0.0", "--port", String(await freePort())],
      env: {},
    });
    const { code } = await relay.exited;
    assert.notEqual(code, 0);
    assert.match(relay.stderr, /without a signing secret/);
  });
});
