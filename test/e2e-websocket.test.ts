// WebSocket: shared threads between clients, turns outliving their client, stdio and
// WebSocket at once, and the security checks, all against the real CLI.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "./support/fake-model-server.js";
import { makeWorkspace, modelEnv, text, threadStartParams } from "./support/harness.js";
import { ServerProcess } from "./support/server-process.js";
import { TestClient } from "./support/test-client.js";

function httpGet(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on("error", reject);
  });
}

describe("two WebSocket clients sharing a thread", () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let url: string;
  before(async () => {
    fake = await FakeModelServer.start();
    server = ServerProcess.spawn({ args: ["--listen", "ws://127.0.0.1:0"], env: modelEnv(fake) });
    url = await server.websocketUrl();
  });
  after(async () => {
    await server.kill();
    await fake.close();
  });

  it("both see every event; either can answer the approval", async () => {
    const a = await TestClient.overWebSocket(url);
    const b = await TestClient.overWebSocket(url);
    await a.initialize();
    await b.initialize();
    const workspace = makeWorkspace();
    const threadId = ((await a.call("thread/start", threadStartParams(workspace))).thread as { id: string }).id;
    // thread/started is broadcast to every client.
    await b.notification("thread/started", (p) => p.threadId === threadId);
    await b.call("thread/subscribe", { threadId });
    b.handle("item/approval/request", () => ({ decision: "accept" }));

    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "call_ws", name: "bash", arguments: { command: "echo shared" } }] },
      { kind: "response", text: ["all ", "done"] },
    );
    await a.call("turn/start", { threadId, input: text("run") });
    const [endA, endB] = await Promise.all([a.turnEnd(threadId), b.turnEnd(threadId)]);
    assert.equal(endA.method, "turn/completed");
    assert.equal(endB.method, "turn/completed");
    const resolvedA = await a.notification("item/approval/resolved", (p) => p.threadId === threadId);
    assert.equal(resolvedA.decision, "accept");
    const methods = (c: TestClient) => c.received.filter((m) => m.params?.threadId === threadId && m.id === undefined && m.method !== "thread/started").map((m) => `${m.method}#${String(m.params!.seq)}`);
    assert.deepEqual(methods(a), methods(b));
    a.close();
    b.close();
  });

  it("a started turn keeps running when its client goes away", async () => {
    const a = await TestClient.overWebSocket(url);
    await a.initialize();
    const workspace = makeWorkspace();
    const threadId = ((await a.call("thread/start", threadStartParams(workspace))).thread as { id: string }).id;
    fake.enqueue({ kind: "response", text: ["still ", "running ", "after ", "disconnect"], chunkDelayMs: 40 });
    const turn = (await a.call("turn/start", { threadId, input: text("go") })).turn as { id: string };
    a.close();
    await a.closed;

    const b = await TestClient.overWebSocket(url);
    await b.initialize();
    await b.call("thread/subscribe", { threadId });
    const read = async () => ((await b.call("thread/read", { threadId })).thread as { turns: Array<{ id: string; status: string }> }).turns;
    if ((await read())[0]!.status === "running") await b.turnEnd(threadId, turn.id);
    assert.equal((await read())[0]!.status, "completed");
    b.close();
  });
});

describe("stdio and WebSocket at once", () => {
  it("a thread started over stdio is visible over WebSocket", async () => {
    const server = ServerProcess.spawn({ args: ["--listen", "stdio://", "--listen", "ws://127.0.0.1:0"] });
    try {
      const url = await server.websocketUrl();
      const stdio = TestClient.overStdio(server.child);
      await stdio.initialize();
      const ws = await TestClient.overWebSocket(url);
      await ws.initialize();
      const workspace = makeWorkspace();
      const threadId = ((await stdio.call("thread/start", threadStartParams(workspace))).thread as { id: string }).id;
      await ws.notification("thread/started", (p) => p.threadId === threadId);
      const listed = (await ws.call("thread/list", {})).data as Array<{ id: string }>;
      assert.ok(listed.some((t) => t.id === threadId));
      ws.close();
    } finally {
      await server.kill();
    }
  });
});

describe("WebSocket security", () => {
  let server: ServerProcess;
  let url: string;
  before(async () => {
    server = ServerProcess.spawn({ args: ["--listen", "ws://127.0.0.1:0", "--token", "s3cret", "--allow-origin", "http://trusted.example"] });
    url = await server.websocketUrl();
  });
  after(() => server.kill());

  it("serves health and readiness", async () => {
    const base = url.replace(/^ws/, "http").replace(/\/ws$/, "");
    assert.equal(await httpGet(`${base}/healthz`), 200);
    assert.equal(await httpGet(`${base}/readyz`), 200);
  });

  it("checks the token before the upgrade", async () => {
    await assert.rejects(TestClient.overWebSocket(url), /401/);
    await assert.rejects(TestClient.overWebSocket(`${url}?token=wrong`), /401/);
    const byQuery = await TestClient.overWebSocket(`${url}?token=s3cret`);
    await byQuery.initialize();
    byQuery.close();
    const byHeader = await TestClient.overWebSocket(url, { headers: { Authorization: "Bearer s3cret" } });
    await byHeader.initialize();
    byHeader.close();
  });

  it("rejects Origins not explicitly allowed, on upgrades and plain requests", async () => {
    await assert.rejects(TestClient.overWebSocket(`${url}?token=s3cret`, { headers: { Origin: "http://evil.example" } }), /403/);
    const base = url.replace(/^ws/, "http").replace(/\/ws$/, "");
    assert.equal(await httpGet(`${base}/healthz`, { Origin: "http://evil.example" }), 403);
    const trusted = await TestClient.overWebSocket(`${url}?token=s3cret`, { headers: { Origin: "http://trusted.example" } });
    trusted.close();
  });

  it("rejects Host names that are not loopback or allowed", async () => {
    await assert.rejects(TestClient.overWebSocket(`${url}?token=s3cret`, { headers: { Host: "evil.example" } }), /403/);
  });

  it("refuses to bind a non-loopback address without a token", async () => {
    const open = ServerProcess.spawn({ args: ["--listen", "ws://0.0.0.0:0"] });
    const exit = await open.exited;
    assert.notEqual(exit.code, 0);
    assert.match(open.stderr, /token/i);
  });
});
