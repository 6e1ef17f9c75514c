// switchyard/client against the real CLI: typed requests over stdio and WebSocket, per-thread
// event streams, approvals, timeouts, and reconnecting through server restarts with every
// event of a thread delivered exactly once, in order.
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WebSocketServer } from "ws";
import {
  ConnectionClosedError,
  RequestTimeoutError,
  RpcError,
  SwitchyardClient,
  type ApprovalRequest,
  type ClientEvent,
  type ClientOptions,
  type RequestParams,
  type ServerNotification,
  type StdioTarget,
} from "../../src/client/index.js";
import { FakeModelServer } from "../support/fake-model-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { freePort, ServerProcess, tempDir } from "../support/server-process.js";
import { FULL_CAPABILITIES, TestClient } from "../support/test-client.js";

function startParams(workspace: string): RequestParams<"thread/start"> {
  return {
    identity: { channelName: "test", userId: "tester", channelContext: `workspace:${workspace}`, workspacePath: workspace },
    historyMode: "server",
  };
}

/** Records every event the client delivers from now on, in the background. */
function record(client: SwitchyardClient, threadId?: string): ClientEvent[] {
  const events: ClientEvent[] = [];
  void (async () => {
    for await (const event of client.events(threadId)) events.push(event);
  })();
  return events;
}

const isNotification = (e: ClientEvent): e is ServerNotification => e.method !== "gap";

/** "method#seq" of every notification of the thread, in delivery order. */
function logOf(events: ClientEvent[], threadId: string): string[] {
  return events
    .filter(isNotification)
    .flatMap((e) => ("seq" in e.params && e.params.threadId === threadId ? [`${e.method}#${e.params.seq}`] : []));
}

/** The thread's whole event log as a fresh raw connection gets it: thread/subscribe from seq 0. */
async function replayedLog(url: string, threadId: string): Promise<string[]> {
  const raw = await TestClient.overWebSocket(url);
  try {
    await raw.initialize(FULL_CAPABILITIES);
    // The replay is sent before the subscribe's answer, so it has all arrived by now.
    await raw.call("thread/subscribe", { threadId, afterSeq: 0 });
    return raw.received
      .filter((m) => m.id === undefined && m.params?.threadId === threadId)
      .map((m) => `${m.method}#${String(m.params!.seq)}`);
  } finally {
    raw.close();
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function assertSameLog(delivered: string[], replayed: string[]): void {
  const seqs = delivered.map((entry) => Number(entry.split("#")[1]));
  assert.ok(
    seqs.every((s, i) => i === 0 || s > seqs[i - 1]!),
    `seqs not strictly increasing: ${seqs.join(",")}`,
  );
  assert.equal(new Set(seqs).size, seqs.length, "duplicated seqs");
  assert.deepEqual(delivered, replayed);
}

const deltas = (n: number): string[] => Array.from({ length: n }, (_, i) => `c${i} `);

describe("switchyard/client", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  const stdioTarget = (dataDir: string, workspace: string): StdioTarget => ({
    transport: "stdio",
    args: ["--data-dir", dataDir],
    env: { ...modelEnv(fake), SWITCHYARD_TOKEN: undefined, SWITCHYARD_LOG_LEVEL: "warn" },
    cwd: workspace,
    stderr: "ignore",
  });

  it("typed requests over stdio; errors carry the JSON-RPC code; close stops the server", async () => {
    const dataDir = tempDir("data");
    const workspace = makeWorkspace();
    const client = await SwitchyardClient.connect(stdioTarget(dataDir, workspace));
    try {
      assert.equal(client.serverInfo.name, "switchyard");
      const { thread } = await client.startThread({ ...startParams(workspace), displayName: "Typed" });
      assert.equal(thread.displayName, "Typed");
      fake.enqueue({ kind: "response", text: ["typed ", "answer"] });
      const { turn } = await client.startTurn(thread.id, "hello");
      assert.equal(turn.status, "running");
      const end = await client.turnEnd(turn.id);
      assert.equal(end.method, "turn/completed");
      const read = await client.readThread(thread.id);
      const items = read.thread.turns?.[0]?.items ?? [];
      const message = items.find((i) => i.type === "agentMessage");
      assert.equal(message?.type === "agentMessage" ? message.payload.text : undefined, "typed answer");

      const missing = await client.readThread("thread_missing").then(
        () => assert.fail("expected an error"),
        (error: unknown) => error,
      );
      assert.ok(missing instanceof RpcError);
      assert.equal(missing.code, -32010);
      assert.match(missing.message, /thread_missing/);
    } finally {
      await client.close();
    }
    // A graceful stop (SIGTERM) releases the data directory's lock; a kill would leave it.
    assert.equal(fs.existsSync(path.join(dataDir, "switchyard.lock")), false);
    assert.equal(client.state, "closed");
  });

  it("typed requests over WebSocket, with a token", async () => {
    const server = ServerProcess.spawn({ args: ["--listen", "ws://127.0.0.1:0", "--token", "t0ken"], env: modelEnv(fake) });
    try {
      const url = await server.websocketUrl();
      await assert.rejects(SwitchyardClient.connect({ transport: "websocket", url }, { reconnect: false }), /401/);
      const client = await SwitchyardClient.connect({ transport: "websocket", url, token: "t0ken" });
      try {
        const workspace = makeWorkspace();
        const { thread } = await client.request("thread/start", startParams(workspace));
        const list = await client.request("thread/list", { identity: { workspacePath: workspace } });
        assert.deepEqual(
          list.data.map((t) => t.id),
          [thread.id],
        );
        const renamed = await client.request("thread/rename", { threadId: thread.id, displayName: "Renamed" });
        assert.equal(renamed.thread.displayName, "Renamed");
      } finally {
        await client.close();
      }
    } finally {
      await server.kill();
    }
  });

  it("events(threadId) yields only that thread's events, and ends when the client closes", async () => {
    const dataDir = tempDir("data");
    const workspace = makeWorkspace();
    const client = await SwitchyardClient.connect(stdioTarget(dataDir, workspace));
    const { thread: a } = await client.startThread(startParams(workspace));
    const { thread: b } = await client.startThread(startParams(workspace));
    const ofA = client.events(a.id);
    const all = record(client);
    fake.enqueue({ kind: "response", text: ["for ", "a"] }, { kind: "response", text: ["for ", "b"] });
    const { turn: turnA } = await client.startTurn(a.id, "a");
    await client.turnEnd(turnA.id);
    const { turn: turnB } = await client.startTurn(b.id, "b");
    await client.turnEnd(turnB.id);

    const seen: ClientEvent[] = [];
    for await (const event of ofA) {
      seen.push(event);
      if (event.method === "turn/completed") break;
    }
    assert.ok(seen.every((e) => isNotification(e) && "threadId" in e.params && e.params.threadId === a.id));
    const deltasOfA = seen.flatMap((e) => (e.method === "item/agentMessage/delta" ? [e.params.delta] : []));
    assert.deepEqual(deltasOfA, ["for ", "a"]);
    assert.ok(logOf(all, b.id).some((entry) => entry.startsWith("turn/completed#")));

    const open = client.events(b.id);
    const drained = (async () => {
      let count = 0;
      for await (const _ of open) count++;
      return count;
    })();
    await client.close();
    assert.equal(await drained, 0, "the iterator ends at close");
  });

  it("answers approvals with the handler", async () => {
    const asked: ApprovalRequest[] = [];
    const options: ClientOptions = {
      onApproval: (request) => {
        asked.push(request);
        return "accept";
      },
    };
    const workspace = makeWorkspace();
    const client = await SwitchyardClient.connect(stdioTarget(tempDir("data"), workspace), options);
    try {
      const { thread } = await client.startThread(startParams(workspace));
      fake.enqueue(
        { kind: "response", toolCalls: [{ id: "call_ok", name: "bash", arguments: { command: "echo approved" } }] },
        { kind: "response", text: "ran it" },
      );
      const resolved = client.waitFor("item/approval/resolved", (p) => p.threadId === thread.id);
      const { turn } = await client.startTurn(thread.id, "run it");
      assert.equal((await client.turnEnd(turn.id)).method, "turn/completed");
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.approvalType, "shell");
      assert.match(asked[0]!.operation + asked[0]!.target, /echo approved/);
      const outcome = await resolved;
      assert.equal(outcome.decision, "accept");
      assert.equal(outcome.source, "client");
    } finally {
      await client.close();
    }
  });

  it("deleting a thread mid-turn: the turn's end comes first, and turnEnd has it", async () => {
    const workspace = makeWorkspace();
    const client = await SwitchyardClient.connect(stdioTarget(tempDir("data"), workspace));
    try {
      const { thread } = await client.startThread(startParams(workspace));
      const events = record(client, thread.id);
      fake.enqueue({ kind: "response", text: ["working", " on it"], holdOpen: true });
      const streaming = client.waitFor("item/agentMessage/delta", (p) => p.threadId === thread.id && p.delta === " on it");
      const { turn } = await client.startTurn(thread.id, "hold");
      await streaming;
      const deleted = client.waitFor("thread/deleted", (p) => p.threadId === thread.id);
      assert.deepEqual(await client.request("thread/delete", { threadId: thread.id }), { deleted: true });
      await deleted;
      assert.equal((await client.turnEnd(turn.id)).method, "turn/cancelled");
      const methods = events.filter(isNotification).map((e) => e.method);
      const cancelled = methods.indexOf("turn/cancelled");
      assert.ok(cancelled >= 0 && cancelled < methods.indexOf("thread/deleted"), methods.join(" "));
    } finally {
      await client.close();
    }
  });

  it("turnEnd of a turn whose thread was deleted before its end came (another node's, in a cluster) rejects as not found", async () => {
    // A peer that says what a cluster node may: the turn started, then its thread is gone.
    const peer = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    peer.on("connection", (socket) => {
      const send = (message: object): void => socket.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
      socket.on("message", (data) => {
        const message = JSON.parse(String(data)) as { id?: number; method: string };
        if (message.method === "initialize") send({ id: message.id, result: { serverInfo: { name: "peer", version: "0" } } });
        if (message.method !== "turn/start") return;
        const turn = { id: "turn_gone", threadId: "thread_gone", status: "running", items: [] };
        send({ method: "turn/started", params: { threadId: "thread_gone", seq: 1, turn } });
        send({ id: message.id, result: { turn } });
        send({ method: "thread/deleted", params: { threadId: "thread_gone", seq: 2 } });
      });
    });
    await once(peer, "listening");
    const { port } = peer.address() as AddressInfo;
    const client = await SwitchyardClient.connect({ transport: "websocket", url: `ws://127.0.0.1:${port}` }, { reconnect: false });
    try {
      const deleted = client.waitFor("thread/deleted");
      const { turn } = await client.startTurn("thread_gone", "hello");
      const waiting = client.turnEnd(turn.id, 0); // no timeout: only the thread/deleted ends it
      await deleted;
      const notFound = (error: unknown): boolean => error instanceof RpcError && error.code === -32010 && /thread_gone/.test(error.message);
      await assert.rejects(waiting, notFound);
      await assert.rejects(client.turnEnd(turn.id, 0), notFound, "asked after the thread/deleted, too");
    } finally {
      await client.close();
      peer.close();
    }
  });

  it("refuses an option put in the target, where it would be ignored, before starting anything", async () => {
    const target = { ...stdioTarget(tempDir("data"), makeWorkspace()), onApproval: () => "accept" as const };
    await assert.rejects(
      SwitchyardClient.connect(target),
      (error: Error) => error instanceof TypeError && /options go in the second argument, not the target: onApproval$/.test(error.message),
    );
  });

  it("times out requests; a request in flight when the connection drops rejects with ConnectionClosedError", async () => {
    const server = ServerProcess.spawn({ args: ["--listen", "ws://127.0.0.1:0"], env: modelEnv(fake) });
    const url = await server.websocketUrl();
    const client = await SwitchyardClient.connect({ transport: "websocket", url }, { reconnect: false, requestTimeoutMs: 10_000 });
    try {
      server.child.kill("SIGSTOP"); // the server stops answering
      const t0 = Date.now();
      await assert.rejects(client.request("thread/list", {}, { timeoutMs: 300 }), (error: unknown) => {
        assert.ok(error instanceof RequestTimeoutError);
        assert.equal(error.method, "thread/list");
        return true;
      });
      assert.ok(Date.now() - t0 < 2_000);
      server.child.kill("SIGCONT");
      assert.ok(Array.isArray((await client.request("thread/list", {})).data), "the connection still works");

      server.child.kill("SIGSTOP");
      const pending = assert.rejects(
        client.request("thread/list", {}),
        (error: unknown) => error instanceof ConnectionClosedError && /thread\/list/.test(error.message),
      );
      const closed = client.waitFor("closed");
      await server.kill("SIGKILL");
      await pending;
      assert.ok((await closed).error instanceof ConnectionClosedError, "without reconnect, the client closes with the cause");
      assert.equal(client.state, "closed");
      await assert.rejects(client.request("thread/list", {}), ConnectionClosedError);
    } finally {
      await client.close();
      await server.kill("SIGKILL");
    }
  });

  it("takes a server that answers nothing (hung, or the network broke) as gone, and reconnects once it answers", async () => {
    const server = ServerProcess.spawn({ args: ["--listen", "ws://127.0.0.1:0"], env: modelEnv(fake) });
    const url = await server.websocketUrl();
    const reconnect = { initialDelayMs: 50, maxDelayMs: 200, maxAttempts: 100 };
    const client = await SwitchyardClient.connect({ transport: "websocket", url }, { heartbeatMs: 200, reconnect });
    try {
      const disconnected = client.waitFor("disconnected", undefined, 10_000);
      server.child.kill("SIGSTOP"); // the socket stays open; nothing comes through it
      await disconnected;
      const reconnected = client.waitFor("reconnected", undefined, 30_000);
      server.child.kill("SIGCONT");
      await reconnected;
      assert.ok(Array.isArray((await client.request("thread/list", {})).data));
    } finally {
      await client.close();
      await server.kill("SIGKILL");
    }
  });

  describe("surviving server restarts", () => {
    /** Servers on one fixed port and data directory, so a restarted one is the "same" server. */
    async function restartable() {
      const port = await freePort();
      const dataDir = tempDir("data");
      const self = {
        url: "",
        server: undefined as ServerProcess | undefined,
        async start(otherDataDir?: string): Promise<ServerProcess> {
          self.server = ServerProcess.spawn({
            dataDir: otherDataDir ?? dataDir,
            args: ["--listen", `ws://127.0.0.1:${port}`],
            env: modelEnv(fake),
          });
          self.url = await self.server.websocketUrl();
          return self.server;
        },
      };
      await self.start();
      return self;
    }
    const reconnect = { initialDelayMs: 50, maxDelayMs: 400, maxAttempts: 50 };

    it("kill -9 mid-turn: reconnects by itself, no event lost or duplicated, the turn fails as serverRestarted", async () => {
      const servers = await restartable();
      const client = await SwitchyardClient.connect({ transport: "websocket", url: servers.url }, { reconnect });
      try {
        const delivered = record(client);
        const workspace = makeWorkspace();
        const { thread } = await client.startThread(startParams(workspace));
        fake.enqueue({ kind: "response", text: deltas(30), chunkDelayMs: 60 });
        const midStream = client.waitFor("item/agentMessage/delta", (p) => p.threadId === thread.id && p.delta === "c5 ", 10_000);
        const { turn } = await client.startTurn(thread.id, "stream slowly");
        await midStream;
        const disconnected = client.waitFor("disconnected");
        const reconnected = client.waitFor("reconnected", () => true, 20_000);
        await servers.server!.kill("SIGKILL");
        await disconnected;
        assert.equal(client.state, "reconnecting");

        await servers.start(); // same port, same data directory
        await reconnected;
        const end = await client.turnEnd(turn.id, 10_000);
        assert.equal(end.method, "turn/failed");
        assert.equal(end.method === "turn/failed" ? end.params.error.code : undefined, "serverRestarted");

        fake.enqueue({ kind: "response", text: ["after ", "restart"] });
        const { turn: next } = await client.startTurn(thread.id, "again");
        assert.equal((await client.turnEnd(next.id)).method, "turn/completed");

        const replayed = await replayedLog(servers.url, thread.id);
        await until(() => logOf(delivered, thread.id).length >= replayed.length, "the client delivered the whole log");
        assertSameLog(logOf(delivered, thread.id), replayed);
        assert.ok(replayed.some((e) => e.startsWith("item/agentMessage/delta")));
        assert.ok(!delivered.some((e) => e.method === "gap"));
      } finally {
        await client.close();
        await servers.server!.kill("SIGKILL");
      }
    });

    it("graceful restart (SIGTERM) between turns: the client carries on", async () => {
      const servers = await restartable();
      const client = await SwitchyardClient.connect({ transport: "websocket", url: servers.url }, { reconnect });
      try {
        const delivered = record(client);
        const workspace = makeWorkspace();
        const { thread } = await client.startThread(startParams(workspace));
        fake.enqueue({ kind: "response", text: ["one"] });
        const { turn: first } = await client.startTurn(thread.id, "first");
        assert.equal((await client.turnEnd(first.id)).method, "turn/completed");

        const reconnected = client.waitFor("reconnected", () => true, 20_000);
        const exit = await servers.server!.kill("SIGTERM");
        assert.equal(exit.code, 0);
        await servers.start();
        await reconnected;

        fake.enqueue({ kind: "response", text: ["two"] });
        const { turn: second } = await client.startTurn(thread.id, "second");
        assert.equal((await client.turnEnd(second.id)).method, "turn/completed");
        const read = await client.readThread(thread.id);
        assert.deepEqual(
          read.thread.turns?.map((t) => t.status),
          ["completed", "completed"],
        );

        // Asking for the whole log again replays it, but the client delivers nothing twice.
        const again = await client.request("thread/subscribe", { threadId: thread.id, afterSeq: 0 });
        assert.ok(again.replayed > 0);

        const replayed = await replayedLog(servers.url, thread.id);
        await until(() => logOf(delivered, thread.id).length >= replayed.length, "the client delivered the whole log");
        assertSameLog(logOf(delivered, thread.id), replayed);
      } finally {
        await client.close();
        await servers.server!.kill("SIGKILL");
      }
    });
    it("reports a gap when the server cannot replay a followed thread", async () => {
      const servers = await restartable();
      const client = await SwitchyardClient.connect({ transport: "websocket", url: servers.url }, { reconnect });
      try {
        const { thread: lost } = await client.startThread(startParams(makeWorkspace()));
        const ofLost = client.events(lost.id);
        const gap = client.waitFor("gap", () => true, 20_000);
        const reconnected = client.waitFor("reconnected", () => true, 20_000);
        await servers.server!.kill("SIGKILL");
        await servers.start(tempDir("other-data")); // a server that never knew the thread
        const { threadId, error } = await gap;
        assert.equal(threadId, lost.id);
        assert.ok(error instanceof RpcError);
        assert.equal(error.code, -32010);
        await reconnected; // the client itself is fine
        let gapInStream = false;
        for await (const event of ofLost) {
          if (event.method !== "gap") continue;
          gapInStream = event.params.threadId === lost.id;
          break;
        }
        assert.ok(gapInStream, "the thread's event stream reports the gap too");
        assert.ok(Array.isArray((await client.request("thread/list", {})).data));
      } finally {
        await client.close();
        await servers.server!.kill("SIGKILL");
      }
    });
  });

  it("over stdio, reconnecting respawns the server on the same data directory", async () => {
    const dataDir = tempDir("data");
    const workspace = makeWorkspace();
    const client = await SwitchyardClient.connect(stdioTarget(dataDir, workspace), { reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
    try {
      const { thread } = await client.startThread(startParams(workspace));
      fake.enqueue({ kind: "response", text: "before" });
      const { turn } = await client.startTurn(thread.id, "one");
      await client.turnEnd(turn.id);
      const lock = JSON.parse(fs.readFileSync(path.join(dataDir, "switchyard.lock"), "utf8")) as { pid: number };
      const reconnected = client.waitFor("reconnected", () => true, 20_000);
      process.kill(lock.pid, "SIGKILL");
      await reconnected;
      const respawned = JSON.parse(fs.readFileSync(path.join(dataDir, "switchyard.lock"), "utf8")) as { pid: number };
      assert.notEqual(respawned.pid, lock.pid);

      fake.enqueue({ kind: "response", text: "after" });
      const { turn: next } = await client.startTurn(thread.id, "two");
      assert.equal((await client.turnEnd(next.id)).method, "turn/completed");
      assert.equal((await client.readThread(thread.id)).thread.turns?.length, 2);
    } finally {
      await client.close();
    }
  });
});
