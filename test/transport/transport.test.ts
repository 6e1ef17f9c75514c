import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import { WebSocket, type ClientOptions } from "ws";
import { z } from "zod";
import { ConnectionClosedError, RpcConnection, type RpcHandlers } from "../../src/rpc/connection.js";
import { dispatchRequests } from "../../src/rpc/methods.js";
import type { MessageChannel } from "../../src/transport/channel.js";
import { createStdioChannel } from "../../src/transport/stdio.js";
import { isLoopbackHost } from "../../src/loopback.js";
import {
  assertSafeBind,
  startWebSocketServer,
  type RunningWebSocketServer,
  type WebSocketServerOptions,
} from "../../src/transport/websocket.js";

const handlers: RpcHandlers = {
  onRequest: dispatchRequests(
    { echo: { params: z.object({ value: z.unknown() }), result: z.unknown() }, ping: { params: z.object({}), result: z.string() } },
    { echo: ({ value }) => value, ping: () => "pong" },
  ),
};

const req = (id: unknown, m: string, params?: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method: m, params });

/** Reads newline-terminated JSON messages from a stream, in order. */
class LineReader {
  private buffer = "";
  private readonly lines: string[] = [];
  private readonly waiters: Array<(line: string) => void> = [];

  constructor(stream: PassThrough) {
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      this.buffer += chunk;
      let nl: number;
      while ((nl = this.buffer.indexOf("\n")) !== -1) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        const waiter = this.waiters.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
  }

  nextLine(): Promise<string> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async next(): Promise<unknown> {
    return JSON.parse(await this.nextLine());
  }
}

function stdioSetup(maxMessageBytes = 64) {
  const input = new PassThrough();
  const output = new PassThrough();
  const channel = createStdioChannel(input, output, { maxMessageBytes });
  const conn = new RpcConnection(channel, handlers);
  return { input, output, channel, conn, reader: new LineReader(output) };
}

describe("stdio channel", () => {
  it("answers JSONL requests, one per line", async () => {
    const { input, reader, channel } = stdioSetup();
    assert.deepEqual(channel.info, { transport: "stdio", remote: "stdio" });
    input.write(req(1, "ping") + "\n" + req("b", "echo", { value: 2 }) + "\n");
    assert.equal(await reader.nextLine(), '{"jsonrpc":"2.0","id":1,"result":"pong"}');
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: "b", result: 2 });
  });

  it("tolerates CRLF and ignores blank lines", async () => {
    const { input, reader } = stdioSetup();
    input.write("\n\r\n   \n" + req(1, "ping") + "\r\n");
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 1, result: "pong" });
  });

  it("reassembles lines split across chunks, even inside a UTF-8 character", async () => {
    const { input, reader } = stdioSetup(256);
    const bytes = Buffer.from(req(1, "echo", { value: "héllo ✓ 𝄞" }) + "\n", "utf8");
    for (let i = 0; i < bytes.length; i++) input.write(bytes.subarray(i, i + 1));
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 1, result: "héllo ✓ 𝄞" });
  });

  it("accepts a message of exactly the limit, with or without CR", async () => {
    const base = req(1, "echo", { value: "" });
    const text = req(1, "echo", { value: "x".repeat(64 - base.length) });
    assert.equal(Buffer.byteLength(text), 64);
    const { input, reader } = stdioSetup(64);
    input.write(text + "\n" + text + "\r\n");
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 1, result: "x".repeat(64 - base.length) });
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 1, result: "x".repeat(64 - base.length) });
  });

  it("discards an oversized line, reports it once, and still answers the next line", async () => {
    const { input, reader, conn } = stdioSetup(64);
    input.write("y".repeat(200) + "\n" + req(2, "ping") + "\n");
    assert.deepEqual(await reader.next(), {
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32600,
        message: "Message too large: 200 bytes exceeds the 64-byte limit",
        data: { reason: "messageTooLarge", size: 200, limit: 64 },
      },
    });
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 2, result: "pong" });

    // The same with the oversized line arriving in many chunks.
    for (let i = 0; i < 10; i++) input.write("z".repeat(50));
    input.write("\n" + req(3, "ping") + "\n");
    const err = (await reader.next()) as { error: { data: { size: number } } };
    assert.equal(err.error.data.size, 500);
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 3, result: "pong" });
    assert.equal(conn.closed, false);
  });

  it("delivers a last line without a newline when input ends", async () => {
    const input = new PassThrough();
    const channel = createStdioChannel(input, new PassThrough(), { maxMessageBytes: 64 });
    const got: string[] = [];
    channel.onMessage((m) => got.push(m));
    const closed = new Promise<void>((resolve) => channel.onClose(resolve));
    input.end('{"a":1}\n{"b":2}');
    await closed;
    assert.deepEqual(got, ['{"a":1}', '{"b":2}']);
  });

  it("closes when input ends, rejecting pending requests", async () => {
    const { input, reader, conn } = stdioSetup();
    const pending = conn.request("client/x");
    assert.deepEqual(await reader.next(), { jsonrpc: "2.0", id: 1, method: "client/x" });
    const closed = new Promise<void>((resolve) => conn.onClose(resolve));
    input.end();
    await closed;
    assert.equal(conn.closed, true);
    await assert.rejects(pending, ConnectionClosedError);
  });

  it("routes responses from the peer to our requests", async () => {
    const { input, reader, conn } = stdioSetup();
    const p = conn.request("client/ask", { q: 1 });
    const msg = (await reader.next()) as { id: number };
    input.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: "yes" }) + "\n");
    assert.equal(await p, "yes");
  });
});

// --- WebSocket ---

function httpGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const r = httpRequest(url, { headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    r.on("error", reject);
    r.end();
  });
}

/** Connects and reports the HTTP status of a refused handshake, or the open socket. */
function connect(url: string, options: ClientOptions = {}): Promise<{ status: number } | { ws: WebSocket }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      res.resume();
      ws.terminate();
    });
    ws.once("error", reject);
  });
}

async function open(url: string, options: ClientOptions = {}): Promise<WebSocket> {
  const result = await connect(url, options);
  if ("ws" in result) return result.ws;
  throw new Error(`handshake refused with ${result.status}`);
}

/** Sends a message and waits for the next one, parsed. */
function call(ws: WebSocket, message: string | Buffer): Promise<unknown> {
  return new Promise((resolve) => {
    ws.once("message", (data: Buffer) => resolve(JSON.parse(data.toString("utf8"))));
    ws.send(message);
  });
}

describe("WebSocket server", () => {
  const TOKEN = "s3cret-token";
  let server: RunningWebSocketServer;
  let base: string; // http://127.0.0.1:port
  let ready = false;
  const channels: MessageChannel[] = [];

  async function start(extra: Partial<WebSocketServerOptions> = {}): Promise<RunningWebSocketServer> {
    return startWebSocketServer({ host: "127.0.0.1", port: 0, maxMessageBytes: 1024, ...extra }, (channel) => {
      channels.push(channel);
      new RpcConnection(channel, handlers);
    });
  }

  before(async () => {
    server = await start({
      token: TOKEN,
      allowedOrigins: ["http://localhost:5173"],
      allowedHosts: ["agent.internal"],
      readiness: () => (ready ? "ready" : "starting"),
    });
    base = server.url.replace(/^ws:/, "http:").replace(/\/ws$/, "");
  });
  after(() => server.close());

  it("reports its URL with the real port", () => {
    assert.match(server.url, /^ws:\/\/127\.0\.0\.1:\d+\/ws$/);
    assert.doesNotMatch(server.url, /:0\/ws$/);
  });

  it("serves /healthz and /readyz without a token", async () => {
    assert.deepEqual(await httpGet(`${base}/healthz`), { status: 200, body: { status: "ok" } });
    assert.deepEqual(await httpGet(`${base}/readyz`), { status: 503, body: { status: "starting" } });
    ready = true;
    assert.deepEqual(await httpGet(`${base}/readyz`), { status: 200, body: { status: "ready" } });
  });

  it("returns 404 for unknown paths and 401 before that without a token", async () => {
    assert.equal((await httpGet(`${base}/nope?token=${TOKEN}`)).status, 404);
    assert.equal((await httpGet(`${base}/nope`)).status, 401);
    assert.deepEqual(await connect(`${base.replace("http", "ws")}/other?token=${TOKEN}`), { status: 404 });
  });

  it("requires the token on upgrade: missing or wrong -> 401", async () => {
    assert.deepEqual(await connect(server.url), { status: 401 });
    assert.deepEqual(await connect(`${server.url}?token=wrong`), { status: 401 });
    assert.deepEqual(await connect(server.url, { headers: { authorization: "Bearer wrong" } }), { status: 401 });
    assert.deepEqual(await connect(`${server.url}?token=${TOKEN}x`), { status: 401 });
  });

  it("accepts the right token via query or bearer header", async () => {
    const a = await open(`${server.url}?token=${encodeURIComponent(TOKEN)}`);
    assert.deepEqual(await call(a, req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
    a.close();
    const b = await open(server.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.deepEqual(await call(b, req("x", "echo", { value: [1] })), { jsonrpc: "2.0", id: "x", result: [1] });
    b.close();
    const last = channels.at(-1);
    assert.equal(last?.info.transport, "websocket");
    assert.match(last?.info.remote ?? "", /^127\.0\.0\.1:\d+$/);
  });

  it("also upgrades at the root path, with the same token and Origin checks", async () => {
    const root = `${base.replace("http", "ws")}/`;
    assert.deepEqual(await connect(root), { status: 401 });
    assert.deepEqual(await connect(`${root}?token=${TOKEN}`, { origin: "http://evil.example" }), { status: 403 });
    const c = await open(`${root}?token=${encodeURIComponent(TOKEN)}`);
    assert.deepEqual(await call(c, req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
    c.close();
  });

  it("with anyPath, upgrades on any path, still checking the token", async () => {
    const anyPath = await start({ token: TOKEN, anyPath: true });
    try {
      const other = anyPath.url.replace(/\/ws$/, "/some/where");
      assert.deepEqual(await connect(other), { status: 401 });
      const c = await open(`${other}?key=${TOKEN}`);
      assert.deepEqual(await call(c, req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
      c.close();
    } finally {
      await anyPath.close();
    }
  });

  it("takes the token as ?key= too (the claude-app-server's pairing key)", async () => {
    assert.deepEqual(await connect(`${server.url}?key=wrong`), { status: 401 });
    const c = await open(`${server.url}?key=${encodeURIComponent(TOKEN)}`);
    assert.deepEqual(await call(c, req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
    c.close();
  });

  it("refuses a foreign Origin with 403, on upgrade and on /healthz", async () => {
    const url = `${server.url}?token=${TOKEN}`;
    assert.deepEqual(await connect(url, { origin: "http://evil.example" }), { status: 403 });
    assert.equal((await httpGet(`${base}/healthz`, { origin: "http://evil.example" })).status, 403);
    assert.equal((await httpGet(`${base}/healthz`, { origin: "null" })).status, 403);
    // Origin is checked before the token.
    assert.deepEqual(await connect(server.url, { origin: "http://evil.example" }), { status: 403 });
  });

  it("accepts an allowed Origin", async () => {
    const ws = await open(`${server.url}?token=${TOKEN}`, { origin: "http://localhost:5173" });
    assert.deepEqual(await call(ws, req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
    ws.close();
    assert.equal((await httpGet(`${base}/healthz`, { origin: "http://localhost:5173" })).status, 200);
  });

  it("refuses a foreign Host with 403 and accepts loopback and allowed names", async () => {
    const url = `${server.url}?token=${TOKEN}`;
    assert.deepEqual(await connect(url, { headers: { host: "evil.example" } }), { status: 403 });
    assert.equal((await httpGet(`${base}/healthz`, { host: "evil.example:80" })).status, 403);
    for (const host of ["localhost:1234", "127.0.0.1", "[::1]:99", "agent.internal:8080", "LOCALHOST"]) {
      assert.equal((await httpGet(`${base}/healthz`, { host })).status, 200, host);
    }
    const ws = await open(url, { headers: { host: "agent.internal" } });
    ws.close();
  });

  it("answers an oversized frame with an error and keeps the connection", async () => {
    const ws = await open(`${server.url}?token=${TOKEN}`);
    const big = req(1, "echo", { value: "x".repeat(2000) });
    const size = Buffer.byteLength(big);
    assert.deepEqual(await call(ws, big), {
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32600,
        message: `Message too large: ${size} bytes exceeds the 1024-byte limit`,
        data: { reason: "messageTooLarge", size, limit: 1024 },
      },
    });
    assert.deepEqual(await call(ws, req(2, "ping")), { jsonrpc: "2.0", id: 2, result: "pong" });
    // Binary frames are read as UTF-8 text.
    assert.deepEqual(await call(ws, Buffer.from(req(3, "echo", { value: "é" }))), {
      jsonrpc: "2.0",
      id: 3,
      result: "é",
    });
    ws.close();
  });

  it("assertSafeBind refuses a non-loopback bind without a token", async () => {
    assert.throws(() => assertSafeBind("0.0.0.0", undefined), /without a token/);
    assert.throws(() => assertSafeBind("192.168.1.5", ""), /without a token/);
    assert.doesNotThrow(() => assertSafeBind("0.0.0.0", "tok"));
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]) {
      assert.doesNotThrow(() => assertSafeBind(host, undefined), host);
      assert.equal(isLoopbackHost(host), true, host);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "evil.example", "128.0.0.1", "localhost.evil"]) {
      assert.equal(isLoopbackHost(host), false, host);
    }
    await assert.rejects(
      startWebSocketServer({ host: "0.0.0.0", port: 0, maxMessageBytes: 1024 }, () => {}),
      /token/,
    );
  });
});

describe("WebSocket heartbeat", () => {
  let server: RunningWebSocketServer;
  before(async () => {
    server = await startWebSocketServer({ host: "127.0.0.1", port: 0, maxMessageBytes: 1024, pingIntervalMs: 100 }, (c) => {
      new RpcConnection(c, handlers);
    });
  });
  after(() => server.close());

  it("keeps a peer that answers pings", async () => {
    const ws = await open(server.url);
    let closed = false;
    ws.on("close", () => (closed = true));
    // Wait for several pings (each one answered automatically), then check the socket still works.
    await new Promise<void>((resolve) => {
      let pings = 0;
      ws.on("ping", () => {
        if (++pings === 4) resolve();
      });
    });
    assert.equal(closed, false);
    assert.equal(ws.readyState, WebSocket.OPEN);
    assert.deepEqual(await call(ws, req(1, "ping")), { jsonrpc: "2.0", id: 1, result: "pong" });
    ws.close();
  });

  it("terminates a peer that stops answering pings", async () => {
    const ws = await open(server.url, { autoPong: false });
    let pings = 0;
    ws.on("ping", () => pings++);
    const code = await new Promise<number>((resolve) => ws.once("close", (c: number) => resolve(c)));
    assert.equal(code, 1006); // terminated without a closing handshake
    assert.ok(pings >= 1);
  });

  it("close() closes open sockets with 1001", async () => {
    const other = await startWebSocketServer({ host: "127.0.0.1", port: 0, maxMessageBytes: 1024 }, (c) => {
      new RpcConnection(c, handlers);
    });
    const ws = await open(other.url);
    const closed = new Promise<number>((resolve) => ws.once("close", (c: number) => resolve(c)));
    await other.close();
    assert.equal(await closed, 1001);
  });
});

describe("WebSocket backpressure", () => {
  it("closes a peer that stops reading instead of buffering without bound", async () => {
    let channel: MessageChannel | undefined;
    const server = await startWebSocketServer(
      { host: "127.0.0.1", port: 0, maxMessageBytes: 1024, pingIntervalMs: 0, maxBufferedBytes: 256 * 1024 },
      (c) => {
        channel = c;
      },
    );
    try {
      // A raw client that completes the handshake and then never reads again.
      const { port } = new URL(server.url);
      const socket = net.connect(Number(port), "127.0.0.1");
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      await new Promise<void>((resolve) => socket.once("data", () => resolve()));
      socket.pause();
      while (!channel) await new Promise((resolve) => setImmediate(resolve));
      let closed = false;
      channel.onClose(() => (closed = true));
      const chunk = "x".repeat(64 * 1024);
      let sent = 0;
      // Bounded: 200 MiB at most, far more than the kernel's socket buffers plus the cap.
      while (!closed && sent < 3200) {
        channel.send(chunk);
        sent++;
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.equal(closed, true, `still open after ${sent} messages`);
      socket.destroy();
    } finally {
      await server.close();
    }
  });
});
