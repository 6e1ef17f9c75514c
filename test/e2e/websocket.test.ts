// WebSocket: shared threads between clients, turns outliving their client, stdio and
// WebSocket at once, and the security checks, all against the real CLI.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { SwitchyardClient, type ApprovalRequest, type ClientEvent, type RequestParams } from "../../src/client/index.js";
import { makeWorkspace, modelEnv, threadStartParams } from "../support/harness.js";
import { ServerProcess } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";

function httpGet(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on("error", reject);
  });
}

function startParams(workspace: string): RequestParams<"thread/start"> {
  return {
    identity: { channelName: "test", userId: "tester", channelContext: `workspace:${workspace}`, workspacePath: workspace },
    historyMode: "server",
  };
}

/** Every event a client delivers from now on, in order. */
function record(client: SwitchyardClient): ClientEvent[] {
  const events: ClientEvent[] = [];
  client.onEvent((event) => events.push(event));
  return events;
}

/** "method#seq" of the thread's notifications, thread/started aside: it is a broadcast, not part of the subscription. */
function methods(events: ClientEvent[], threadId: string): string[] {
  return events.flatMap((e) =>
    e.method !== "gap" && e.method !== "thread/started" && "seq" in e.params && e.params.threadId === threadId
      ? [`${e.method}#${e.params.seq}`]
      : [],
  );
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for a condition");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
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
    // Both declare approval support, so the server asks both; a never answers, b accepts.
    const askedA: ApprovalRequest[] = [];
    const neverAnswer = (request: ApprovalRequest): Promise<never> => {
      askedA.push(request);
      return new Promise<never>(() => {});
    };
    const a = await SwitchyardClient.connect({ transport: "websocket", url }, { onApproval: neverAnswer });
    const b = await SwitchyardClient.connect({ transport: "websocket", url }, { onApproval: () => "accept" });
    try {
      const eventsA = record(a);
      const eventsB = record(b);
      const workspace = makeWorkspace();
      // thread/started is broadcast to every client.
      const bSawStart = b.waitFor("thread/started", (p) => p.thread.workspacePath === workspace);
      const { thread } = await a.startThread(startParams(workspace));
      assert.equal((await bSawStart).threadId, thread.id);
      await b.request("thread/subscribe", { threadId: thread.id });

      fake.enqueue(
        { kind: "response", toolCalls: [{ id: "call_ws", name: "bash", arguments: { command: "echo shared" } }] },
        { kind: "response", text: ["all ", "done"] },
      );
      const { turn } = await a.startTurn(thread.id, "run");
      const [endA, endB] = await Promise.all([a.turnEnd(turn.id), b.turnEnd(turn.id)]);
      assert.equal(endA.method, "turn/completed");
      assert.equal(endB.method, "turn/completed");
      assert.equal(askedA.length, 1, "a was asked too");
      const resolvedA = eventsA.find((e) => e.method === "item/approval/resolved" && e.params.threadId === thread.id);
      assert.equal(resolvedA?.method === "item/approval/resolved" ? resolvedA.params.decision : undefined, "accept");
      // The iterators deliver asynchronously: let both catch up before comparing.
      // The turn's last event is the runtime going idle; both recordings must have reached it.
      const idle = (events: ClientEvent[]) =>
        events.some((e) => e.method === "thread/runtimeChanged" && e.params.threadId === thread.id && !e.params.runtime.running);
      await until(() => idle(eventsA) && idle(eventsB));
      assert.deepEqual(methods(eventsA, thread.id), methods(eventsB, thread.id));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("an approval still waiting is asked of a client that subscribes later, and of one that resumes after the others left", async () => {
    // a is asked and never answers; b subscribes later and is asked the same request; both leave;
    // c resumes the thread, is asked, and accepts: the question stayed open for it.
    const asked = (into: ApprovalRequest[]) => (request: ApprovalRequest) => {
      into.push(request);
      return new Promise<never>(() => {});
    };
    const askedA: ApprovalRequest[] = [];
    const askedB: ApprovalRequest[] = [];
    const a = await SwitchyardClient.connect({ transport: "websocket", url }, { onApproval: asked(askedA) });
    const b = await SwitchyardClient.connect({ transport: "websocket", url }, { onApproval: asked(askedB) });
    const askedC: ApprovalRequest[] = [];
    const c = await SwitchyardClient.connect(
      { transport: "websocket", url },
      {
        onApproval: (request) => {
          askedC.push(request);
          return "accept";
        },
      },
    );
    try {
      const { thread } = await a.startThread(startParams(makeWorkspace()));
      fake.enqueue(
        { kind: "response", toolCalls: [{ id: "call_late", name: "bash", arguments: { command: "echo asked-late" } }] },
        { kind: "response", text: "done" },
      );
      const { turn } = await a.startTurn(thread.id, "run");
      await a.waitFor("item/started", (p) => p.threadId === thread.id && p.item.type === "approvalRequest");
      await until(() => askedA.length === 1);

      await b.request("thread/subscribe", { threadId: thread.id });
      await until(() => askedB.length === 1);
      assert.equal(askedB[0]!.requestId, askedA[0]!.requestId);
      await a.close();
      await b.close();
      assert.equal(askedC.length, 0, "c follows nothing yet: it is not asked");

      const ended = c.turnEnd(turn.id);
      const resolvedAtC = c.waitFor("item/approval/resolved", (p) => p.threadId === thread.id);
      await c.request("thread/resume", { threadId: thread.id });
      assert.equal((await ended).method, "turn/completed");
      assert.deepEqual(
        askedC.map((r) => r.requestId),
        [askedA[0]!.requestId],
      );
      const resolved = await resolvedAtC;
      assert.deepEqual([resolved.decision, resolved.source], ["accept", "client"]);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it("a started turn keeps running when its client goes away", async () => {
    const a = await SwitchyardClient.connect({ transport: "websocket", url });
    const workspace = makeWorkspace();
    const { thread } = await a.startThread(startParams(workspace));
    fake.enqueue({ kind: "response", text: ["still ", "running ", "after ", "disconnect"], chunkDelayMs: 40 });
    const { turn } = await a.startTurn(thread.id, "go");
    await a.close();

    const b = await SwitchyardClient.connect({ transport: "websocket", url });
    try {
      await b.request("thread/subscribe", { threadId: thread.id });
      const read = async () => (await b.readThread(thread.id)).thread.turns ?? [];
      if ((await read())[0]!.status === "running") await b.turnEnd(turn.id);
      assert.equal((await read())[0]!.status, "completed");
    } finally {
      await b.close();
    }
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
    server = ServerProcess.spawn({
      args: ["--listen", "ws://127.0.0.1:0", "--token", "s3cret", "--allow-origin", "http://trusted.example"],
    });
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
