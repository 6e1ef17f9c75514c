// Two Yeaft relay processes on one PostgreSQL serve as one relay: a user added once logs in on
// either, a token from one works on the other (and a logout on one holds on both), a browser on
// one relay talks with an agent connected to the other both ways, sees it come and go, a
// message waits for it while it is away and reaches it on whichever relay it comes back to, a
// newer connection on one relay supersedes the older on the other, and an agent whose relay is
// killed reads offline.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { postgresMissing, TestPostgres } from "../support/postgres.js";
import { freePort, ServerProcess, tempDir } from "../support/server-process.js";
import { addUser, login, type Msg, Peer } from "../support/yeaft.js";
import { fetchOrSayWhy } from "../support/fetch.js";

type Listed = { id: string; online: boolean; conversations: string[] };

const listed = (m: Msg): Listed[] => m.agents as Listed[];

describe("yeaft relays sharing one PostgreSQL", { skip: postgresMissing() }, () => {
  let postgres: TestPostgres;
  let url: string;
  const relays: ServerProcess[] = [];
  const ports: number[] = [];
  let secret: string;
  let token: string;

  before(async () => {
    postgres = await TestPostgres.start();
    url = postgres.createDatabase("relays");
    // Added once, into the database (not a relay's users.json): both relays know the user.
    secret = await addUser(tempDir("yeaft-cli"), "alice", "alice-password", { SWITCHYARD_DATABASE_URL: url });
    for (let i = 0; i < 2; i++) {
      ports.push(await freePort());
      relays.push(
        ServerProcess.spawn({
          command: ["yeaft", "relay"],
          args: ["--port", String(ports[i]), "--store", url],
          dataDir: tempDir(`yeaft-relay${i}`),
        }),
      );
    }
    await Promise.all(relays.map((r) => r.waitForLog((l) => l.msg === "yeaft relay listening")));
  });
  after(async () => {
    for (const relay of relays) await relay.kill();
    postgres?.stop();
  });

  const ws = (relay: number): string => `ws://127.0.0.1:${ports[relay]}/`;

  async function connectAgent(relay: number, id: string): Promise<Peer> {
    const agent = await Peer.open(`${ws(relay)}?type=agent&id=${id}`);
    const challenge = await agent.waitFor((m) => m.type === "auth_required");
    agent.send({ type: "auth", tempId: challenge.tempId, secret });
    await agent.waitFor((m) => m.type === "registered");
    return agent;
  }

  it("shares users and the token's signature: a token from one relay opens the other", async () => {
    const first = await login(`http://127.0.0.1:${ports[0]}`, "alice", "alice-password");
    assert.equal(first.status, 200);
    token = first.token!;
    assert.equal((await login(`http://127.0.0.1:${ports[1]}`, "alice", "wrong-password")).status, 401);
    const browser = await Peer.open(`${ws(1)}?type=web&token=${token}`);
    assert.equal((await browser.waitFor((m) => m.type === "auth_result")).success, true);
    browser.ws.close();
  });

  it("routes between a browser on one relay and an agent on the other, both ways, and shows its presence", async () => {
    const browser = await Peer.open(`${ws(0)}?type=web&token=${token}`);
    const other = await Peer.open(`${ws(1)}?type=web&token=${token}`);
    await browser.waitFor((m) => m.type === "agent_list");
    const agent = await connectAgent(1, "laptop");
    const agentId = "alice:laptop";
    await browser.waitFor((m) => m.type === "agent_list" && listed(m).some((a) => a.id === agentId && a.online));

    browser.send({ type: "create_conversation", agentId, conversationId: "c1" });
    assert.equal((await agent.waitFor((m) => m.type === "create_conversation")).conversationId, "c1");
    agent.send({ type: "session_ready", conversationId: "c1", sessionId: "s1" });
    for (const peer of [browser, other]) {
      const ready = await peer.waitFor((m) => m.type === "session_ready");
      assert.deepEqual([ready.conversationId, ready.agentId], ["c1", agentId]);
    }
    // Messages of one browser reach the agent on the other relay in the order sent.
    for (let i = 0; i < 20; i++) browser.send({ type: "send_message", conversationId: "c1", text: `m${i}` });
    await agent.waitFor((m) => m.type === "send_message" && m.text === "m19");
    assert.deepEqual(
      agent.received.filter((m) => m.type === "send_message").map((m) => m.text),
      Array.from({ length: 20 }, (_, i) => `m${i}`),
    );
    // The agent's answers, in order, on both relays' browsers.
    for (let i = 0; i < 20; i++) agent.send({ type: "claude_output", conversationId: "c1", data: { n: i } });
    for (const peer of [browser, other]) {
      await peer.waitFor((m) => m.type === "claude_output" && (m.data as { n: number }).n === 19);
      assert.deepEqual(
        peer.received.filter((m) => m.type === "claude_output").map((m) => (m.data as { n: number }).n),
        Array.from({ length: 20 }, (_, i) => i),
      );
    }

    // Away: the browser sees it go; a message waits; it comes back on the browser's relay and gets it.
    agent.ws.close();
    // Both browsers see it go (the agent's relay may tell its own browser after the other relay's).
    for (const peer of [browser, other])
      await peer.waitFor((m) => m.type === "agent_list" && listed(m).some((a) => a.id === agentId && !a.online));
    browser.send({ type: "send_message", conversationId: "c1", text: "while away" });
    const status = await browser.waitFor((m) => m.type === "agent_status" && m.agentId === agentId);
    assert.deepEqual([status.state, status.queued], ["offline", 1]);
    const from = other.received.length;
    const back = await connectAgent(0, "laptop");
    assert.equal((await back.waitFor((m) => m.type === "send_message")).text, "while away");
    const seen = await other.waitFor((m) => m.type === "agent_list" && other.received.indexOf(m) >= from);
    assert.deepEqual(
      listed(seen).find((a) => a.id === agentId),
      { id: agentId, name: "laptop", online: true, conversations: ["c1"] },
    );

    // A newer connection on the other relay supersedes this one.
    const newer = await connectAgent(1, "laptop");
    assert.equal((await back.waitClosed()).code, 1008);
    browser.send({ type: "send_message", conversationId: "c1", text: "to the newer" });
    assert.equal((await newer.waitFor((m) => m.type === "send_message")).text, "to the newer");
    // An agent speaks only for its own conversations, on any relay.
    const stranger = await connectAgent(0, "desktop");
    stranger.send({ type: "claude_output", conversationId: "c1", data: {} });
    assert.equal((await stranger.waitFor((m) => m.type === "error")).code, "not_your_conversation");
    for (const peer of [newer, stranger, browser, other]) peer.ws.close();
  });

  it("logs a token out on both relays", async () => {
    const fresh = (await login(`http://127.0.0.1:${ports[1]}`, "alice", "alice-password")).token!;
    const res = await fetchOrSayWhy(`http://127.0.0.1:${ports[0]}/api/auth/logout`, {
      method: "POST",
      headers: { authorization: `Bearer ${fresh}` },
    });
    assert.equal(res.status, 200);
    const refused = await Peer.open(`${ws(1)}?type=web&token=${fresh}`);
    assert.equal((await refused.waitFor((m) => m.type === "auth_result")).success, false);
  });

  it("shows an agent offline to browsers on the other relay once its relay is killed", async () => {
    await connectAgent(1, "server");
    const browser = await Peer.open(`${ws(0)}?type=web&token=${token}`);
    await browser.waitFor((m) => m.type === "agent_list" && listed(m).some((a) => a.id === "alice:server" && a.online));
    const from = browser.received.length;
    await relays[1]!.kill("SIGKILL"); // nobody gets a get_agents: the list must come by itself
    // Nobody tells: the surviving relay finds the agent's relay gone and sends a new list itself.
    await browser.waitFor(
      (m) => m.type === "agent_list" && browser.received.indexOf(m) >= from && listed(m).some((a) => a.id === "alice:server" && !a.online),
    );
    browser.ws.close();
  });
});
