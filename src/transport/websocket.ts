// The WebSocket transport: an HTTP server with health endpoints and a /ws upgrade endpoint.
// Every request is checked before anything else happens (Origin, then Host, then token), which
// protects a loopback server from browsers (cross-site requests, DNS rebinding) and, with a
// token, from other local users.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { bearerToken, sameSecret } from "../bearer.js";
import { silentLogger, type Logger } from "../log.js";
import type { MessageChannel } from "./channel.js";
import { isLoopbackHost, unbracket } from "../loopback.js";
import { createWebSocketChannel } from "./websocket-channel.js";

export interface WebSocketServerOptions {
  host: string;
  port: number;
  token?: string;
  /** Exact Origin values accepted; any request carrying another Origin is refused. */
  allowedOrigins?: string[];
  /** Extra Host names accepted besides loopback names and `host`. */
  allowedHosts?: string[];
  maxMessageBytes: number;
  /** Default 30000; 0 disables pings. */
  pingIntervalMs?: number;
  /** Unsent bytes a connection may hold before it is closed as too slow. Default 64 MiB. */
  maxBufferedBytes?: number;
  /** A peer that takes none of its pending output for this long is closed. */
  stallTimeoutMs?: number;
  /** What `/readyz` says: "ready" (200), or why not (503). Default "ready". */
  readiness?: () => string;
  /**
   * Accept the upgrade on any path, as the claude-app-server does. Otherwise on `/ws` and `/`
   * (clients of the Codex family connect to the root).
   */
  anyPath?: boolean;
  logger?: Logger;
}

export interface RunningWebSocketServer {
  /** ws://host:port/ws with the real port. */
  url: string;
  /** Peers connected now. */
  connectionCount(): number;
  close(): Promise<void>;
}

/**
 * Frames up to this much above maxMessageBytes are received and answered with a JSON-RPC
 * "Message too large" error; larger ones make `ws` close the socket (1009) without buffering.
 */
const PAYLOAD_SLACK_BYTES = 64 * 1024;
const DEFAULT_PING_INTERVAL_MS = 30_000;
/** How long close() waits for peers to complete the closing handshake before cutting them off. */
const CLOSE_GRACE_MS = 1_000;

export function assertSafeBind(host: string, token: string | undefined): void {
  if (isLoopbackHost(host) || token) return;
  throw new Error(
    `Refusing to listen on non-loopback address "${host}" without a token: anyone who can reach it ` +
      `could drive the agent. Set a token, or bind to 127.0.0.1.`,
  );
}

export async function startWebSocketServer(
  opts: WebSocketServerOptions,
  onChannel: (channel: MessageChannel) => void,
): Promise<RunningWebSocketServer> {
  const token = opts.token || undefined; // an empty token counts as none
  assertSafeBind(opts.host, token);
  const log = (opts.logger ?? silentLogger).child({ component: "websocket" });
  const guard = new RequestGuard(opts, token);
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxMessageBytes + PAYLOAD_SLACK_BYTES });
  const alive = new WeakMap<WebSocket, boolean>();

  const server = createServer((req, res) => {
    const url = parseRequestUrl(req);
    if (!url) return sendJson(res, 400, { error: "Bad request" });
    const isProbe = url.pathname === "/healthz" || url.pathname === "/readyz";
    const rejection = guard.check(req, url, !isProbe);
    if (rejection) {
      log.info({ remote: remoteOf(req), path: url.pathname, ...rejection }, "rejected HTTP request");
      return sendJson(res, rejection.status, { error: rejection.reason });
    }
    if (isProbe && req.method !== "GET" && req.method !== "HEAD") {
      return sendJson(res, 405, { error: "Method not allowed" });
    }
    if (url.pathname === "/healthz") return sendJson(res, 200, { status: "ok" });
    if (url.pathname === "/readyz") {
      const status = opts.readiness?.() ?? "ready";
      return sendJson(res, status === "ready" ? 200 : 503, { status });
    }
    if (url.pathname === "/ws") return sendJson(res, 426, { error: "WebSocket upgrade required" });
    log.debug({ remote: remoteOf(req), path: url.pathname }, "HTTP 404");
    sendJson(res, 404, { error: "Not found" });
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", (err) => log.debug({ err, remote: remoteOf(req) }, "socket error during upgrade"));
    const url = parseRequestUrl(req);
    if (!url) return abortHandshake(socket, 400, "Bad request");
    const upgradable = opts.anyPath || url.pathname === "/ws" || url.pathname === "/";
    const rejection = guard.check(req, url, true) ?? (upgradable ? undefined : notFound);
    if (rejection) {
      const level = rejection.status === 404 ? "debug" : "info";
      log[level]({ remote: remoteOf(req), path: url.pathname, ...rejection }, "rejected WebSocket upgrade");
      return abortHandshake(socket, rejection.status, rejection.reason);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      alive.set(ws, true);
      ws.on("pong", () => alive.set(ws, true));
      const remote = remoteOf(req);
      log.debug({ remote }, "WebSocket connected");
      onChannel(
        createWebSocketChannel(ws, {
          remote,
          maxMessageBytes: opts.maxMessageBytes,
          log,
          ...(opts.maxBufferedBytes !== undefined ? { maxBufferedBytes: opts.maxBufferedBytes } : {}),
          ...(opts.stallTimeoutMs !== undefined ? { stallTimeoutMs: opts.stallTimeoutMs } : {}),
          socket,
        }),
      );
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (err) => log.error({ err }, "HTTP server error"));

  // Heartbeat: a peer that has not answered the previous ping is gone (or hung); drop it.
  const pingIntervalMs = opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
  const pinger =
    pingIntervalMs > 0
      ? setInterval(() => {
          for (const ws of wss.clients) {
            if (alive.get(ws) === false) {
              log.info("terminating a WebSocket peer that did not answer ping");
              ws.terminate();
              continue;
            }
            alive.set(ws, false);
            ws.ping();
          }
        }, pingIntervalMs)
      : undefined;
  pinger?.unref();

  const { port } = server.address() as AddressInfo;
  const urlHost = opts.host.includes(":") && !opts.host.startsWith("[") ? `[${opts.host}]` : opts.host;

  let closing: Promise<void> | undefined;
  return {
    url: `ws://${urlHost}:${port}/ws`,
    connectionCount: () => wss.clients.size,
    close() {
      closing ??= (async () => {
        if (pinger) clearInterval(pinger);
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        const clients = [...wss.clients];
        await Promise.race([
          Promise.all(clients.map((ws) => closeGracefully(ws))),
          new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref()),
        ]);
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        server.closeAllConnections();
        await serverClosed;
      })();
      return closing;
    },
  };
}

// --- request checks ---

interface Rejection {
  status: 401 | 403 | 404;
  reason: string;
}

const notFound: Rejection = { status: 404, reason: "Not found" };

class RequestGuard {
  private readonly origins: Set<string>;
  private readonly hosts: Set<string>;
  private readonly anyHost: boolean;
  constructor(
    opts: WebSocketServerOptions,
    private readonly token: string | undefined,
  ) {
    this.origins = new Set((opts.allowedOrigins ?? []).map((o) => o.trim().toLowerCase().replace(/\/+$/, "")));
    this.hosts = new Set([...(opts.allowedHosts ?? []), opts.host].map((h) => normalizeHostname(hostnameOf(h))));
    // Bound to every interface with a token: clients may use any name for us; the token protects.
    this.anyHost = isWildcardHost(opts.host) && token !== undefined;
  }

  check(req: IncomingMessage, url: URL, requireToken: boolean): Rejection | undefined {
    // Origin: only browsers send it; a page from another site must never reach us.
    const origin = req.headers.origin;
    if (origin !== undefined && !this.origins.has(origin.trim().toLowerCase())) {
      return { status: 403, reason: `Origin not allowed: ${origin}` };
    }
    // Host: defeats DNS rebinding, where a hostile name resolves to 127.0.0.1.
    if (!this.anyHost) {
      const hostHeader = req.headers.host;
      if (!hostHeader) return { status: 403, reason: "Missing Host header" };
      const hostname = normalizeHostname(hostnameOf(hostHeader));
      if (!isLoopbackHost(hostname) && !this.hosts.has(hostname)) {
        return { status: 403, reason: `Host not allowed: ${hostHeader}` };
      }
    }
    if (requireToken && this.token !== undefined && !this.tokenMatches(req, url, this.token)) {
      return { status: 401, reason: "Missing or invalid token" };
    }
    return undefined;
  }

  private tokenMatches(req: IncomingMessage, url: URL, token: string): boolean {
    const candidates: string[] = [];
    // `key` is the claude-app-server's name for its pairing key.
    for (const name of ["token", "key"]) {
      const fromQuery = url.searchParams.get(name);
      if (fromQuery !== null) candidates.push(fromQuery);
    }
    const bearer = bearerToken(req.headers.authorization);
    if (bearer) candidates.push(bearer);
    return candidates.some((candidate) => sameSecret(candidate, token));
  }
}

/** The hostname part of a Host header value ("[::1]:8080" -> "[::1]", "a.b:80" -> "a.b"). */
function hostnameOf(host: string): string {
  const h = host.trim();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end === -1 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(":");
  // A single colon separates the port; several mean a bare IPv6 address.
  return colon !== -1 && h.indexOf(":", colon + 1) === -1 ? h.slice(0, colon) : h;
}

function normalizeHostname(hostname: string): string {
  return unbracket(hostname.toLowerCase()).replace(/\.$/, "");
}

function isWildcardHost(host: string): boolean {
  const h = unbracket(host.trim());
  return h === "" || h === "0.0.0.0" || h === "::" || h === "0:0:0:0:0:0:0:0";
}

// --- HTTP helpers ---

function parseRequestUrl(req: IncomingMessage): URL | undefined {
  const raw = req.url ?? "/";
  if (!raw.startsWith("/")) return undefined;
  try {
    // A fixed origin: only the path and query matter, and "//x" must stay a path.
    return new URL(`http://localhost${raw}`);
  } catch {
    return undefined;
  }
}

function remoteOf(req: IncomingMessage): string {
  const { remoteAddress = "unknown", remotePort } = req.socket;
  const address = remoteAddress.includes(":") ? `[${remoteAddress}]` : remoteAddress;
  return remotePort === undefined ? address : `${address}:${remotePort}`;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(res.req.method === "HEAD" ? undefined : text);
}

/** Answers a refused upgrade with a plain HTTP response on the raw socket. */
function abortHandshake(socket: Duplex, status: number, reason: string): void {
  const statusText: Record<number, string> = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found" };
  const body = JSON.stringify({ error: reason });
  socket.once("finish", () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${statusText[status] ?? "Error"}\r\n` +
      "Connection: close\r\n" +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "\r\n" +
      body,
  );
}

function closeGracefully(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    ws.once("close", () => resolve());
    ws.close(1001, "Server shutting down");
  });
}
