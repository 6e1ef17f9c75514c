import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { z } from "zod";
import {
  ConnectionClosedError,
  RequestTimeoutError,
  RpcConnection,
  type ConnectionOptions,
  type RpcHandlers,
} from "../../src/rpc/connection.js";
import { ErrorCode, RpcError } from "../../src/rpc/errors.js";
import { dispatchRequests, type Dispatch } from "../../src/rpc/methods.js";
import { createChannelPair, RawPeer } from "../support/channel-pair.js";

/** A promise with its resolve function exposed, to hold handlers until the test releases them. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A code of the face above the engine, passed through unchanged. */
const THREAD_NOT_FOUND = -32010;
const empty = z.object({});
const TestRequests = {
  echo: { params: z.object({ value: z.unknown() }), result: z.unknown() },
  add: { params: z.object({ a: z.number(), b: z.number() }), result: z.number() },
  ping: { params: empty, result: z.string() },
  nothing: { params: empty, result: z.undefined() },
  bigint: { params: empty, result: z.bigint() },
  fail: { params: z.object({ id: z.string() }), result: z.never() },
  crash: { params: empty, result: z.never() },
  slow: { params: z.object({ tag: z.string() }), result: z.string() },
  notes: { params: empty, result: z.array(z.string()) },
};

function testTable(state: { gate?: Promise<void>; notes: string[]; signals: AbortSignal[] }): Dispatch {
  return dispatchRequests(TestRequests, {
    echo: ({ value }) => value,
    add: ({ a, b }) => a + b,
    ping: () => "pong",
    nothing: () => undefined,
    bigint: () => 1n,
    fail: ({ id }) => {
      throw new RpcError(THREAD_NOT_FOUND, `Thread not found: ${id}`, { threadId: id });
    },
    crash: async () => {
      throw new Error("secret internal detail");
    },
    slow: async ({ tag }, ctx) => {
      state.signals.push(ctx.signal);
      await state.gate;
      return tag;
    },
    notes: () => [...state.notes],
  });
}

function setup(options: ConnectionOptions = {}, extra: Partial<RpcHandlers> = {}) {
  const state: { gate?: Promise<void>; notes: string[]; signals: AbortSignal[] } = { notes: [], signals: [] };
  const [serverEnd, clientEnd] = createChannelPair();
  const handlers: RpcHandlers = {
    onRequest: testTable(state),
    onNotification: (m, params) => state.notes.push(`${m}:${JSON.stringify(params)}`),
    ...extra,
  };
  const server = new RpcConnection(serverEnd, handlers, options);
  const peer = new RawPeer(clientEnd);
  return { server, peer, state, serverEnd, clientEnd };
}

const req = (id: unknown, m: string, params?: unknown) =>
  params === undefined ? { jsonrpc: "2.0", id, method: m } : { jsonrpc: "2.0", id, method: m, params };

describe("RpcConnection: requests and errors", () => {
  it("answers a request, echoing the id with its exact type", async () => {
    const { peer } = setup();
    for (const id of ["abc", 7, 0, -3, "0", null]) {
      assert.deepEqual(await peer.call(req(id, "add", { a: 1, b: 2 })), { jsonrpc: "2.0", id, result: 3 });
    }
  });

  it("answers a parse error with -32700 and id null", async () => {
    const { peer } = setup();
    const res = await peer.call('{"jsonrpc":"2.0","id":1,"method":');
    assert.deepEqual(res, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
  });

  it("answers invalid requests with -32600, keeping the id when it can be read", async () => {
    const { peer } = setup();
    const cases: Array<[unknown, unknown]> = [
      [1, null],
      ["text", null],
      [null, null],
      [{ jsonrpc: "1.0", id: 3, method: "ping" }, 3],
      [{ id: 4, method: "ping" }, 4],
      [{ jsonrpc: "2.0", id: 5 }, 5],
      [{ jsonrpc: "2.0", id: "s", method: 42 }, "s"],
      [{ jsonrpc: "2.0", id: { x: 1 }, method: "ping" }, null],
      [{ jsonrpc: "2.0", id: true, method: "ping" }, null],
    ];
    for (const [message, id] of cases) {
      const res = (await peer.call(JSON.stringify(message))) as { id: unknown; error: { code: number } };
      assert.equal(res.error.code, ErrorCode.InvalidRequest, JSON.stringify(message));
      assert.equal(res.id, id, JSON.stringify(message));
      assert.equal((res as { jsonrpc?: string }).jsonrpc, "2.0");
    }
  });

  it('jsonrpcMember "optional" accepts requests and notifications without the member (and still checks a present one)', async () => {
    const { peer } = setup({ jsonrpcMember: "optional" });
    assert.deepEqual(await peer.call({ id: 1, method: "add", params: { a: 2, b: 3 } }), { jsonrpc: "2.0", id: 1, result: 5 });
    peer.send({ method: "note", params: { n: 1 } });
    assert.deepEqual(await peer.call({ id: 2, method: "notes" }), { jsonrpc: "2.0", id: 2, result: ['note:{"n":1}'] });
    const bad = (await peer.call({ jsonrpc: "1.0", id: 3, method: "ping" })) as { error: { code: number } };
    assert.equal(bad.error.code, ErrorCode.InvalidRequest);
    // The default still requires it.
    const strict = setup();
    const refused = (await strict.peer.call({ id: 4, method: "ping" })) as { id: unknown; error: { code: number } };
    assert.deepEqual([refused.id, refused.error.code], [4, ErrorCode.InvalidRequest]);
  });

  it('jsonrpcMember "optional" routes responses without the member to our requests', async () => {
    const { server, peer } = setup({ jsonrpcMember: "optional" });
    const pending = server.request<string>("codex/thing");
    const msg = (await peer.next()) as { jsonrpc: string; id: number };
    assert.equal(msg.jsonrpc, "2.0", "what we send keeps the member");
    peer.send({ id: msg.id, result: "done" });
    assert.equal(await pending, "done");
  });

  it('jsonrpcMember "asPeer": a first request without the member makes the connection speak without it', async () => {
    const { server, peer } = setup({ jsonrpcMember: "asPeer" });
    assert.deepEqual(await peer.call({ id: 1, method: "add", params: { a: 1, b: 1 } }), { id: 1, result: 2 });
    assert.equal(server.omitsJsonrpc, true);
    // Errors, notifications and our requests leave it out too; a present member is still accepted.
    assert.deepEqual(await peer.call({ id: 2, method: "nope" }), { id: 2, error: { code: -32601, message: "Method not found: nope" } });
    server.notify("note", { n: 1 });
    assert.deepEqual(await peer.next(), { method: "note", params: { n: 1 } });
    const pending = server.request<string>("codex/thing");
    const asked = (await peer.next()) as Record<string, unknown>;
    assert.equal("jsonrpc" in asked, false);
    peer.send({ id: asked.id, result: "done" });
    assert.equal(await pending, "done");
    assert.deepEqual(await peer.call({ jsonrpc: "2.0", id: 3, method: "ping" }), { id: 3, result: "pong" });
  });

  it('jsonrpcMember "asPeer": a first request with the member makes it required', async () => {
    const { server, peer } = setup({ jsonrpcMember: "asPeer" });
    assert.deepEqual(await peer.call(req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
    assert.equal(server.omitsJsonrpc, false);
    const refused = (await peer.call({ id: 2, method: "ping" })) as { error: { code: number } };
    assert.equal(refused.error.code, ErrorCode.InvalidRequest);
  });
  it("answers an unknown method with -32601", async () => {
    const { peer } = setup();
    assert.deepEqual(await peer.call(req(1, "nope")), {
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32601, message: "Method not found: nope" },
    });
    // Inherited properties are not methods.
    const res = (await peer.call(req(2, "toString"))) as { error: { code: number } };
    assert.equal(res.error.code, -32601);
  });

  it("validates params with -32602, treating missing params as {}", async () => {
    const { peer } = setup();
    assert.deepEqual(await peer.call(req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });

    const res = (await peer.call(req(2, "add", { a: "x", b: 2 }))) as {
      error: { code: number; message: string; data: { issues: Array<{ path: unknown[] }> } };
    };
    assert.equal(res.error.code, -32602);
    assert.match(res.error.message, /^Invalid params: a: /);
    assert.deepEqual(res.error.data.issues[0]?.path, ["a"]);

    const missing = (await peer.call(req(3, "add"))) as { error: { code: number; message: string } };
    assert.equal(missing.error.code, -32602);
    assert.match(missing.error.message, /^Invalid params: a: /);
  });

  it("passes RpcError code, message and data through", async () => {
    const { peer } = setup();
    assert.deepEqual(await peer.call(req("f", "fail", { id: "t1" })), {
      jsonrpc: "2.0",
      id: "f",
      error: { code: THREAD_NOT_FOUND, message: "Thread not found: t1", data: { threadId: "t1" } },
    });
  });

  it("turns other errors into -32603 Internal error without details", async () => {
    const { peer } = setup();
    const res = await peer.call(req(1, "crash"));
    assert.deepEqual(res, { jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error" } });
    assert.doesNotMatch(JSON.stringify(res), /secret/);
  });

  it("sends null for an undefined result and -32603 for an unserializable one", async () => {
    const { peer } = setup();
    assert.deepEqual(await peer.call(req(1, "nothing")), { jsonrpc: "2.0", id: 1, result: null });
    const res = (await peer.call(req(2, "bigint"))) as { id: number; error: { code: number } };
    assert.equal(res.id, 2);
    assert.equal(res.error.code, -32603);
  });

  it("handles a synchronous throw from onRequest", async () => {
    const { peer } = setup(
      {},
      {
        onRequest: () => {
          throw new Error("boom");
        },
      },
    );
    assert.deepEqual(await peer.call(req(9, "x")), {
      jsonrpc: "2.0",
      id: 9,
      error: { code: -32603, message: "Internal error" },
    });
  });

  it("answers oversized messages with -32600 and keeps the connection open", async () => {
    const { peer, serverEnd, server } = setup();
    serverEnd.simulateOversized(2097153, 1048576);
    assert.deepEqual(await peer.next(), {
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32600,
        message: "Message too large: 2097153 bytes exceeds the 1048576-byte limit",
        data: { reason: "messageTooLarge", size: 2097153, limit: 1048576 },
      },
    });
    assert.equal(server.closed, false);
    assert.deepEqual(await peer.call(req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
  });
});

describe("RpcConnection: batches", () => {
  it("answers a mixed batch with one array", async () => {
    const { peer, state } = setup();
    const res = (await peer.call([
      req(1, "add", { a: 1, b: 1 }),
      { jsonrpc: "2.0", method: "note", params: { n: 1 } },
      42,
      req("x", "nope"),
    ])) as Array<{ id: unknown; result?: unknown; error?: { code: number } }>;
    assert.ok(Array.isArray(res));
    assert.equal(res.length, 3);
    assert.deepEqual(res[0], { jsonrpc: "2.0", id: 1, result: 2 });
    assert.equal(res[1]?.id, null);
    assert.equal(res[1]?.error?.code, -32600);
    assert.equal(res[2]?.id, "x");
    assert.equal(res[2]?.error?.code, -32601);
    assert.deepEqual(state.notes, ['note:{"n":1}']);
  });

  it("answers an empty batch with a single -32600 error", async () => {
    const { peer } = setup();
    const res = (await peer.call("[]")) as { id: unknown; error: { code: number } };
    assert.ok(!Array.isArray(res));
    assert.equal(res.id, null);
    assert.equal(res.error.code, -32600);
  });

  it("sends nothing for a batch of notifications", async () => {
    const { peer, state } = setup();
    peer.send([
      { jsonrpc: "2.0", method: "a" },
      { jsonrpc: "2.0", method: "b", params: [1] },
    ]);
    // Delivery is ordered: had the batch produced a reply, it would arrive before this one.
    assert.deepEqual(await peer.call(req(1, "notes")), { jsonrpc: "2.0", id: 1, result: ["a:undefined", "b:[1]"] });
    assert.deepEqual(state.notes, ["a:undefined", "b:[1]"]);
  });

  it("routes responses to our own requests that arrive inside a batch", async () => {
    const { server, peer } = setup();
    const p1 = server.request("client/one");
    const p1Rejected = assert.rejects(p1, (e: unknown) => e instanceof RpcError && e.code === -32000 && e.message === "nope");
    const p2 = server.request("client/two", { x: 1 });
    const m1 = (await peer.next()) as { id: number; method: string };
    const m2 = (await peer.next()) as { id: number; method: string; params: unknown };
    assert.equal(m1.method, "client/one");
    assert.deepEqual(m2.params, { x: 1 });
    assert.equal(typeof m1.id, "number");
    const res = await peer.call([
      { jsonrpc: "2.0", id: m2.id, result: "two" },
      req(5, "ping"),
      { jsonrpc: "2.0", id: m1.id, error: { code: -32000, message: "nope" } },
    ]);
    assert.deepEqual(res, [{ jsonrpc: "2.0", id: 5, result: "pong" }]);
    assert.equal(await p2, "two");
    await p1Rejected;
  });
});

describe("RpcConnection: concurrency", () => {
  it("does not let a slow request block the next ones", async () => {
    const { peer, state } = setup();
    const g = gate();
    state.gate = g.promise;
    peer.send(req(1, "slow", { tag: "slow" }));
    assert.deepEqual(await peer.call(req(2, "ping")), { jsonrpc: "2.0", id: 2, result: "pong" });
    g.open();
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "slow" });
  });

  it("delivers notifications in arrival order", async () => {
    const { peer, state } = setup();
    for (let i = 0; i < 50; i++) peer.send({ jsonrpc: "2.0", method: "n", params: i });
    const res = (await peer.call(req(1, "notes"))) as { result: string[] };
    assert.deepEqual(
      res.result,
      Array.from({ length: 50 }, (_, i) => `n:${i}`),
    );
    assert.equal(state.notes.length, 50);
  });

  it("refuses requests past the in-flight cap with -32001, then recovers", async () => {
    const { peer, state } = setup({ maxInFlight: 3 });
    const g = gate();
    state.gate = g.promise;
    for (let i = 1; i <= 3; i++) peer.send(req(i, "slow", { tag: `t${i}` }));
    assert.deepEqual(await peer.call(req(4, "ping")), {
      jsonrpc: "2.0",
      id: 4,
      error: { code: -32001, message: "Server overloaded; retry later.", data: { reason: "inFlightLimit", limit: 3 } },
    });
    g.open();
    const results = [await peer.next(), await peer.next(), await peer.next()] as Array<{ id: number; result: string }>;
    assert.deepEqual(results.map((r) => r.id).sort(), [1, 2, 3]);
    assert.deepEqual(await peer.call(req(5, "ping")), { jsonrpc: "2.0", id: 5, result: "pong" });
  });

  it("answers overloaded with the code a face chose with useErrorCodes", async () => {
    const { server, peer, state } = setup({ maxInFlight: 1 });
    server.useErrorCodes({ overloaded: -32005 });
    const g = gate();
    state.gate = g.promise;
    peer.send(req(1, "slow", { tag: "t1" }));
    const refused = (await peer.call(req(2, "ping"))) as { error: { code: number; data: unknown } };
    assert.equal(refused.error.code, -32005);
    assert.deepEqual(refused.error.data, { reason: "inFlightLimit", limit: 1 });
    g.open();
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", id: 1, result: "t1" });
  });
});

describe("RpcConnection: our requests to the peer", () => {
  it("sends notifications with and without params", async () => {
    const { server, peer } = setup();
    server.notify("event/a", { x: 1 });
    server.notify("event/b");
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", method: "event/a", params: { x: 1 } });
    assert.deepEqual(await peer.next(), { jsonrpc: "2.0", method: "event/b" });
  });

  it("resolves with the result and rejects with RpcError on an error response", async () => {
    const { server, peer } = setup();
    const ok = server.request<{ decision: string }>("approval/request", { call: "c1" });
    const msg = (await peer.next()) as { jsonrpc: string; id: number; method: string; params: unknown };
    assert.deepEqual(msg, { jsonrpc: "2.0", id: msg.id, method: "approval/request", params: { call: "c1" } });
    peer.send({ jsonrpc: "2.0", id: msg.id, result: { decision: "accept" } });
    assert.deepEqual(await ok, { decision: "accept" });

    const bad = server.request("approval/request");
    const msg2 = (await peer.next()) as { id: number };
    assert.notEqual(msg2.id, msg.id);
    peer.send({ jsonrpc: "2.0", id: msg2.id, error: { code: -32020, message: "denied", data: { why: 1 } } });
    await assert.rejects(bad, (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.code, -32020);
      assert.equal(e.message, "denied");
      assert.deepEqual(e.data, { why: 1 });
      return true;
    });
  });

  it("times out, and ignores a late response", async () => {
    const { server, peer } = setup({ defaultRequestTimeoutMs: 20 });
    const p = server.request("slow/client");
    const msg = (await peer.next()) as { id: number };
    await assert.rejects(p, RequestTimeoutError);
    peer.send({ jsonrpc: "2.0", id: msg.id, result: "late" });
    // Per-request timeout overrides the default.
    const q = server.request("fast", undefined, { timeoutMs: 5_000 });
    const m2 = (await peer.next()) as { id: number };
    peer.send({ jsonrpc: "2.0", id: m2.id, result: "ok" });
    assert.equal(await q, "ok");
  });

  it("rejects when the request's signal aborts", async () => {
    const { server, peer } = setup();
    const ac = new AbortController();
    const p = server.request("x", undefined, { signal: ac.signal });
    await peer.next();
    ac.abort(new Error("user cancelled"));
    await assert.rejects(p, /user cancelled/);
  });

  it("on close: rejects pending requests, aborts handler signals, calls listeners", async () => {
    const { server, peer, state, clientEnd } = setup();
    state.gate = new Promise(() => {}); // never released
    peer.send(req(1, "slow", { tag: "t" }));
    const pending = server.request("client/thing");
    await peer.next(); // our request reached the peer, so the handler has started too
    assert.equal(state.signals.length, 1);
    let listened = 0;
    server.onClose(() => listened++);
    clientEnd.close();
    await assert.rejects(pending, ConnectionClosedError);
    assert.equal(server.closed, true);
    assert.equal(listened, 1);
    assert.equal(state.signals[0]?.aborted, true);
    await assert.rejects(server.request("after"), ConnectionClosedError);
    server.notify("ignored"); // must not throw
    // A listener added after close still runs.
    await new Promise<void>((resolve) => server.onClose(resolve));
  });

  it("close() closes the channel", async () => {
    const { server, peer } = setup();
    server.close();
    assert.equal(server.closed, true);
    await peer.closed;
  });

  it("two connections talk to each other", async () => {
    const [a, b] = createChannelPair();
    const server = new RpcConnection(a, { onRequest: testTable({ notes: [], signals: [] }) });
    const client = new RpcConnection(b, {
      onRequest: () => {
        throw new RpcError(-32601, "no");
      },
    });
    assert.equal(await client.request("add", { a: 2, b: 3 }), 5);
    await assert.rejects(client.request("add", { a: 2 }), (e: unknown) => e instanceof RpcError && e.code === -32602);
    await assert.rejects(server.request("anything"), (e: unknown) => e instanceof RpcError && e.code === -32601);
    assert.match(server.id, /^conn_/);
    assert.notEqual(server.id, client.id);
  });
});
